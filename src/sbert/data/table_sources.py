"""Reading a table whole into named columns, from any of the sources people keep tables in.

CSV/TSV with a header, JSON lines, Parquet, a `datasets` folder written by `save_to_disk`, or a
table already in memory (pandas, `datasets.Dataset`, Arrow).

Every source gives the same `Table`, so role inference and row checks (data/tables.py) are written once.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sbert.data.common import DataFormatError, LineChecker, read_lines


@dataclass
class Table:
    """Named columns of equal length; `lines[i]` is row i's line in its file (None: row numbers)."""

    where: str
    columns: dict[str, list[Any]]
    types: dict[str, str] = field(default_factory=dict)  # Arrow type names, where the source has a schema
    lines: list[int] | None = None
    skipped: int = 0
    first_row: int = 0  # a piece of a streamed table: the table's row number of this piece's first row

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()), []))

    def row(self, i: int) -> str:
        """Where row i came from: `file:line` or `file row N`."""
        if self.lines is not None:
            return f"{self.where}:{self.lines[i]}"
        return f"{self.where} row {self.first_row + i + 1}"


def read_delimited(path: Path, delimiter: str, skip_bad: bool) -> Table:
    """CSV (or TSV) with a header line; quoted fields may span lines (rows keep their first line's number).

    The common file (one row per line, every row well formed, valid UTF-8) is parsed by pyarrow's
    C++ reader; anything else goes through Python's csv module, which names the line of each problem.
    """
    _exists(path)
    fast = _arrow_delimited(path, delimiter)
    return fast if fast is not None else python_delimited(path, delimiter, skip_bad)


def python_delimited(path: Path, delimiter: str, skip_bad: bool) -> Table:
    """The careful reader: Python's csv module, every row's first line number, each problem named by line."""
    check = LineChecker(skip_bad)
    with io.StringIO(_utf8_text(path), newline="") as f:
        reader = csv.reader(f, delimiter=delimiter)
        try:
            header = next(reader, None)
            if not header or not any(h.strip() for h in header):
                raise DataFormatError(f"{path}:1: expected a header line naming the columns")
            _unique(header, path)
            values: list[list[str]] = [[] for _ in header]
            lines: list[int] = []
            start = reader.line_num + 1
            for row in reader:
                if row and len(row) != len(header):
                    check.bad(path, start, f"expected {len(header)} fields as the header has, found {len(row)}")
                elif row:
                    for column, value in zip(values, row, strict=True):
                        column.append(value)
                    lines.append(start)
                start = reader.line_num + 1
        except (UnicodeDecodeError, csv.Error) as e:
            raise DataFormatError(f"{path}:{reader.line_num + 1}: {e}") from None
    return Table(str(path), dict(zip(header, values, strict=True)), lines=lines, skipped=check.skipped)


def _utf8_text(path: Path) -> str:
    """The file as text (a UTF-8 BOM dropped); a bad byte names its own line and column, as `iter_lines` does.

    Decoded whole before parsing: a text stream decodes ahead in blocks, so its error would name the
    line the parser had reached, not the line of the byte.
    """
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise DataFormatError(f"{path}:{line}: not valid UTF-8 (column {column})") from None


def _arrow_delimited(path: Path, delimiter: str) -> Table | None:
    """The table by pyarrow, or None when its rows and lines may not correspond one to one.

    Row i is line i + 2 only when no row spans lines and no line is blank: the row count must equal
    the count of lines after the header, and the file must hold no empty line. Every cell is read as
    text (no type guessing), as Python's csv module reads it. None too where pyarrow is not installed.
    """
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:  # a base dependency, but an install without it still reads every table
        return None

    data = path.read_bytes()
    data = data.removeprefix(b"\xef\xbb\xbf")  # utf-8-sig: the BOM is not part of the first column's name
    first, _, _ = data.partition(b"\n")
    try:
        header = next(csv.reader([first.decode("utf-8").rstrip("\r")], delimiter=delimiter), [])
    except (UnicodeDecodeError, csv.Error):
        return None
    lines = _line_count(data)
    if not header or len(set(header)) != len(header) or lines is None:
        return None  # the careful reader names the problem (or handles the blank lines)
    source, data = pa.py_buffer(data), b""  # the parsers copy what they keep: the bytes go once parsed
    try:
        table = pacsv.read_csv(
            source,
            parse_options=pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(column_types={h: pa.string() for h in header},
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False),
        )  # fmt: skip
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    del source
    if table.num_rows != lines - 1 or table.column_names != header:
        return None
    rows = table.num_rows
    return Table(str(path), _python_columns(table, header), lines=list(range(2, rows + 2)))


def _line_count(data: bytes) -> int | None:
    """The file's lines, or None when one is blank: then rows and lines may not map one to one."""
    if b"\n\n" in data or b"\n\r\n" in data:
        return None
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def read_jsonl(path: Path, skip_bad: bool) -> Table:
    """JSON lines, one object per line; the first object's keys are the columns.

    The common file (no blank line, every object with the first one's keys and no nulls) is parsed
    by pyarrow's C++ reader; anything else by json.loads line by line, which names each problem's line.
    """
    _exists(path)
    fast = _arrow_jsonl(path)
    return fast if fast is not None else python_jsonl(path, skip_bad)


def _arrow_jsonl(path: Path) -> Table | None:
    """The table by pyarrow, or None when a line is blank, a key is missing, a value is null or a type mixed.

    None too when pyarrow read a value as a date or time: it guesses those from strings, which json.loads
    keeps as text, and a guessed type would change which column gets which role.
    """
    try:
        import pyarrow as pa
        import pyarrow.json as pajson
    except ImportError:  # a base dependency, but an install without it still reads every table
        return None

    data = path.read_bytes()
    first, _, _ = data.partition(b"\n")
    try:
        keys = list(json.loads(first))
    except (ValueError, TypeError):  # not a JSON object (or not UTF-8): the careful reader says which line
        return None
    lines = _line_count(data)
    if lines is None or not data.strip():
        return None
    source, data = pa.BufferReader(data), b""  # the parser copies what it keeps: the bytes go once parsed
    try:
        table = pajson.read_json(source)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    del source
    if table.num_rows != lines or table.column_names != keys or any(c.null_count for c in table.columns):
        return None
    if any(pa.types.is_temporal(c.type) for c in table.columns):
        return None
    return Table(str(path), _python_columns(table, keys), lines=list(range(1, lines + 1)))


def _python_columns(table: Any, names: list[str]) -> dict[str, list[Any]]:
    """Each column as a Python list, the Arrow copy of each dropped once converted (the peak holds one, not all)."""
    columns = {}
    for name in names:
        columns[name] = table.column(name).to_pylist()
        table = table.drop_columns([name])
    return columns


def python_jsonl(path: Path, skip_bad: bool) -> Table:
    """The careful reader: json.loads line by line, each problem named by its line."""
    check = LineChecker(skip_bad)
    columns: dict[str, list[Any]] = {}
    lines: list[int] = []
    for line_no, line in read_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            check.bad(path, line_no, f"not JSON ({e.msg})")
            continue
        if not isinstance(row, dict):
            check.bad(path, line_no, "expected a JSON object")
            continue
        if not columns and not lines:
            columns = {k: [] for k in row}
        missing = [k for k in columns if k not in row]
        if missing:
            check.bad(path, line_no, f"no {missing[0]!r} key, which the first row has")
            continue
        for key, values in columns.items():
            values.append(row[key])
        lines.append(line_no)
    return Table(str(path), columns, lines=lines, skipped=check.skipped)


def read_parquet(path: Path) -> Table:
    """A Parquet file (or a folder of them), with its schema's types."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    _exists(path, folder_ok=True)
    try:
        return arrow_table(pq.read_table(path), str(path))
    except (OSError, pa.ArrowInvalid) as e:  # what pyarrow raises for a file that is not Parquet
        raise DataFormatError(f"{path}: not a Parquet file ({str(e).splitlines()[0]})") from None


def read_saved_dataset(path: Path, split: str | None) -> Table:
    """A folder written by `datasets`' `save_to_disk`: a Dataset, or one split of a DatasetDict."""
    import pyarrow as pa

    files = saved_dataset_files(path, split)
    try:
        batches = [b for f in files for b in _arrow_stream(pa, f)]
        table = pa.Table.from_batches(batches) if batches else None
    except pa.ArrowInvalid as e:
        raise DataFormatError(f"{path}: not Arrow data as save_to_disk writes it ({e})") from None
    if table is None:
        raise DataFormatError(f"{path}: no rows")
    return arrow_table(table, str(path))


def saved_dataset_files(path: Path, split: str | None) -> list[Path]:
    """The Arrow files of a `save_to_disk` folder (of the named split, for a DatasetDict), checked to exist."""
    if not path.is_dir():
        raise DataFormatError(f"{path}: no such folder (hf: takes a folder written by datasets' save_to_disk)")
    if (path / "dataset_dict.json").is_file():
        splits = _json(path / "dataset_dict.json").get("splits", [])
        if split is None or split not in splits:
            got = f"split {split!r} is not among" if split else "a DatasetDict: name a split of"
            raise DataFormatError(f"{path}: {got} {', '.join(map(str, splits))} (hf:{path}:SPLIT)")
        path = path / split
    elif split is not None:
        raise DataFormatError(f"{path}: a single Dataset has no split {split!r}")
    state = path / "state.json"
    if not state.is_file():
        raise DataFormatError(f"{path}: not a datasets save_to_disk folder (no state.json or dataset_dict.json)")
    files = [path / f["filename"] for f in _json(state).get("_data_files", [])]
    if not files or not all(f.is_file() for f in files):
        raise DataFormatError(f"{state}: lists no Arrow data files, or names missing ones")
    return files


def _arrow_stream(pa: Any, file: Path) -> Iterator[Any]:
    with pa.memory_map(str(file)) as source:
        yield from pa.ipc.open_stream(source)


def arrow_table(table: Any, where: str, first_row: int = 0) -> Table:
    """A pyarrow Table (or record batch) as columns, keeping each column's type name for the type checks."""
    names = list(table.column_names)
    _unique(names, where)
    columns = {name: table.column(name).to_pylist() for name in names}
    types = {name: str(table.schema.field(name).type) for name in names}
    return Table(where, columns, types, first_row=first_row)


def in_memory(data: Any, where: str) -> Table:
    """A pandas DataFrame, a `datasets.Dataset`, a pyarrow Table or a dict of equal-length lists."""
    kind = type(data).__module__.split(".")[0]
    convert: dict[str, Callable[[Any], Table]] = {
        "pandas": lambda d: Table(where, {str(c): d[c].tolist() for c in d.columns}),
        # Column by column, decoded as datasets decodes them (an Image feature gives PIL images, not its bytes).
        "datasets": lambda d: Table(where, {str(c): list(d[c]) for c in d.column_names}),
        "pyarrow": lambda d: arrow_table(d, where),
    }
    if kind in convert:
        return convert[kind](data)
    if isinstance(data, dict) and all(isinstance(v, list | tuple) for v in data.values()):
        lengths = {len(v) for v in data.values()}
        if len(lengths) > 1:
            raise DataFormatError(f"{where}: columns of different lengths {sorted(lengths)}")
        return Table(where, {str(k): list(v) for k, v in data.items()})
    raise DataFormatError(
        f"{where}: a {type(data).__name__} is not a table; give a pandas DataFrame, a datasets.Dataset, "
        "a pyarrow Table or a dict of equal-length lists"
    )


def _exists(path: Path, folder_ok: bool = False) -> None:
    if not (path.is_file() or (folder_ok and path.is_dir())):
        raise DataFormatError(f"{path}: no such file")


def _unique(names: list[str], where: Any) -> None:
    seen = {n for n in names if names.count(n) > 1}
    if seen:
        raise DataFormatError(f"{where}: column {sorted(seen)[0]!r} appears twice in the header")


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataFormatError(f"{path}: unreadable ({e})") from None
    if not isinstance(value, dict):
        raise DataFormatError(f"{path}: expected a JSON object")
    return value
