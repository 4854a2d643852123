"""Tables as training data: `csv:`, `tsv:`, `jsonl:`, `parquet:`, `hf:` files and in-memory tables.

A table's columns get roles (data/roles.py); the roles decide the kind of examples:
anchor+positive+negatives are triplets, anchor+positive+score scored pairs (scores in [0, 1], or
`scale=LOW-HIGH`), anchor+positive+label classified pairs, anchor+positive plain pairs, an anchor
alone single texts; a score or label column holding lists (one teacher score per document) makes
a distillation table (data/teacher_scores.py). Options ride in the spec:
`csv[columns=anchor=q,positive=doc;scale=0-5]:FILE`.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress
from operator import not_
from pathlib import Path
from typing import Any

import numpy as np

from sbert.data.common import NLI_LABELS, DataFormatError, Dataset, Kind, LineChecker, parse_float, require, shown
from sbert.data.roles import Roles, infer_roles, missing_role
from sbert.data.scores import parse_options, scale_bounds
from sbert.data.streaming import open_stream
from sbert.data.table_sources import (
    Table,
    in_memory,
    read_delimited,
    read_jsonl,
    read_parquet,
    read_saved_dataset,
)
from sbert.data.teacher_scores import teacher_column, teacher_scores

TABLE_FORMATS = ("csv", "tsv", "jsonl", "parquet", "hf")
TABLE_OPTIONS = ("columns", "scale", "split", "stream")
_TEXT_TYPES = {"string", "large_string"}
_NUMERIC_TYPES = ("int", "uint", "float", "double", "halffloat", "decimal")


def read_table_spec(fmt: str, path: str, options_text: str, skip_bad: bool, spec: str) -> Dataset:
    """The dataset of one table spec (`csv:FILE`, `hf:DIR:SPLIT`, `parquet[columns=...]:FILE`, ...)."""
    options = parse_options(options_text, spec, TABLE_OPTIONS)
    file = Path(path).expanduser()
    split = None
    if fmt == "hf":
        file, split = _hf_split(file, options.get("split"))
    if "stream" in options:
        return _stream(fmt, file, split, f"{fmt}:{path}", options, skip_bad)
    if fmt == "hf":
        table = read_saved_dataset(file, split)
    elif fmt == "parquet":
        table = read_parquet(file)
    elif fmt == "jsonl":
        table = read_jsonl(file, skip_bad)
    else:
        table = read_delimited(file, "," if fmt == "csv" else "\t", skip_bad)
    return table_dataset(table, f"{fmt}:{path}", options.get("columns", ""), options.get("scale"), skip_bad)


def _stream(fmt: str, file: Path, split: str | None, where: str, options: dict[str, str], skip_bad: bool) -> Dataset:
    """`stream=ROWS`: a Parquet or `save_to_disk` table read piece by piece through a shuffle buffer of ROWS rows."""
    if fmt not in ("parquet", "hf"):
        raise DataFormatError(f"{where}: stream= reads parquet: and hf: tables; a {fmt} file is read whole")
    buffer = options["stream"]
    if not buffer.isdigit():
        raise DataFormatError(f"{where}: stream={buffer!r} must be the shuffle buffer's size in rows (stream=10000)")
    columns, scale = options.get("columns", ""), options.get("scale")

    def convert(table: Table, names: tuple[str, ...]) -> Dataset:
        return table_dataset(table, where, columns, scale, skip_bad, names)

    return open_stream(fmt, file, split, where, convert, int(buffer))


def from_table(
    data: Any, name: str = "table", columns: str = "", scale: str | None = None, skip_bad: bool = False
) -> Dataset:
    """Training data from a pandas DataFrame, a `datasets.Dataset`, a pyarrow Table or a dict of lists.

    `columns` sets roles explicitly (`anchor=q,positive=doc,score=rating`); `scale` reads scores on
    LOW-HIGH (e.g. "0-5"). Roles and kind follow the same rules as the file readers.
    """
    return table_dataset(in_memory(data, name), name, columns, scale, skip_bad)


def table_dataset(
    table: Table, name: str, columns: str, scale: str | None, skip_bad: bool, label_names: tuple[str, ...] = ()
) -> Dataset:
    """Infer roles, check types, and turn a table's rows into examples of the kind its roles give.

    `label_names` fixes the classes' numbering (a streamed table's pieces must all number them alike).
    """
    if not table.columns:
        raise DataFormatError(f"{table.where}: no columns")
    names = list(table.columns)
    text_columns = [c for c in names if _is_text(table, c)]
    roles = infer_roles(names, text_columns, columns, table.where)
    if roles.anchor is None:
        raise missing_role(roles, "anchor", names, table.where)
    if roles.positive is None and (roles.negatives or roles.score or roles.label):
        raise missing_role(roles, "positive", names, table.where)
    for column in roles.texts:
        _check_type(table, column, "text", lambda t: t in _TEXT_TYPES)
    teacher = teacher_column(table, roles)
    if roles.score and roles.score != teacher:
        _check_type(table, roles.score, "numbers", lambda t: t.startswith(_NUMERIC_TYPES))
    kind: Kind = "distill" if teacher else _kind(roles)
    if scale and kind != "pair-score":
        raise DataFormatError(f"{table.where}: scale={scale} given, but no score column ({roles.describe()})")
    check = LineChecker(skip_bad)
    bounds = scale_bounds(scale) if scale else (0.0, 1.0)
    texts, targets, rows = _rows(table, roles, kind, bounds, check, name, teacher)
    labels, label_names = _labels(table, roles, rows, label_names) if kind == "pair-class" else (targets, ())
    source = f"roles: {roles.describe()}; columns: {', '.join(names)}"
    kept = labels if kind in ("pair-score", "pair-class", "distill") else None
    dataset = Dataset(name, kind, texts, kept, label_names, skipped=table.skipped + check.skipped, source=source)
    return require(dataset)


def _kind(roles: Roles) -> Kind:
    if roles.positive is None:
        return "text"
    if roles.negatives:
        return "triplet"
    if roles.score:
        return "pair-score"
    return "pair-class" if roles.label else "pair"


def _is_text(table: Table, column: str) -> bool:
    if column in table.types:
        return table.types[column] in _TEXT_TYPES
    values = table.columns[column]
    return all(isinstance(v, str) for v in values) and not all(parse_float(v) is not None for v in values[:100])


def _check_type(table: Table, column: str, what: str, allowed: Callable[[str], bool]) -> None:
    kind = table.types.get(column)
    if kind is not None and not allowed(kind):
        raise DataFormatError(f"{table.where}: column {column!r} holds {kind}, expected {what}")


def _rows(
    table: Table, roles: Roles, kind: Kind, bounds: tuple[float, float], check: LineChecker, spec: str,
    teacher: str | None = None,
) -> tuple[list[tuple[str, ...]], list[Any], list[int]]:  # fmt: skip
    """Each good row's texts and (for scored pairs) its score mapped to [0, 1]; bad rows raise or are counted.

    Checks run column by column (a million rows in a few seconds); a raised error still names the
    first bad row of the file.
    """
    problems: dict[int, str] = {}
    for column in roles.texts:
        values = table.columns[column]
        for i in _bad_texts(values):
            problems.setdefault(i, f"column {column!r} is {shown(values[i])}, expected text")
    if kind == "pair-class" and roles.label:
        labels = table.columns[roles.label]
        for i in (i for i, v in enumerate(labels) if not _is_class(v)):
            reason = f"label {shown(labels[i])} in column {roles.label!r} is not a class (an integer >= 0 or a name)"
            problems.setdefault(i, reason)
    scores = _scores(table, roles, bounds, problems, spec) if kind == "pair-score" else None
    distilled = teacher_scores(table, teacher, len(roles.texts) - 1, problems) if teacher else None
    for i in sorted(problems):
        check.bad_row(table.row(i), problems[i])
    texts = list(zip(*(table.columns[c] for c in roles.texts), strict=True))
    rows = [i for i in range(len(table)) if i not in problems] if problems else list(range(len(table)))
    if problems:
        texts = [texts[i] for i in rows]
    lo, hi = bounds
    targets: list[Any] = ((scores[rows] - lo) / (hi - lo)).tolist() if scores is not None else []
    if distilled is not None:
        targets = [distilled[i] for i in rows]
    return texts, targets, rows


def _bad_texts(values: list[Any]) -> list[int]:
    """Rows whose cell is not a text, empty, or only whitespace."""
    if set(map(type, values)) <= {str}:  # the usual column, at C speed (2x the loop): strip() empties a blank
        return list(compress(range(len(values)), map(not_, map(str.strip, values))))
    return [i for i, v in enumerate(values) if type(v) is not str or not v or v.isspace()]


def _scores(table: Table, roles: Roles, bounds: tuple[float, float], problems: dict[int, str], spec: str) -> np.ndarray:
    """The score column as floats; rows whose score is unreadable or out of `bounds` join `problems`."""
    assert roles.score is not None
    raw = table.columns[roles.score]
    try:
        values = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):  # some cell is not a number: find which, one by one
        values = np.array([np.nan if (n := _number(v)) is None else n for v in raw], dtype=np.float64)
    lo, hi = bounds
    bad = ~(np.isfinite(values) & (values >= lo) & (values <= hi))
    hint = _scale_hint(spec, values) if (lo, hi) == (0.0, 1.0) else ""
    for i in np.flatnonzero(bad).tolist():
        reason = f"score {shown(raw[i])} in column {roles.score!r} is not a number in [{lo:g}, {hi:g}]"
        problems.setdefault(i, reason + (hint if _number(raw[i]) is not None else ""))
    return values


def _scale_hint(spec: str, values: np.ndarray) -> str:
    """How to give the score range: the user's own spec with `[scale=0-TOP]`, TOP the largest score rounded up."""
    fmt, _, path = spec.partition(":")
    finite = values[np.isfinite(values)]
    top = max(1, int(np.ceil(finite.max()))) if finite.size else 5
    return f"; give the range in the spec, e.g. {fmt}[scale=0-{top}]:{path}"


def _labels(
    table: Table, roles: Roles, rows: list[int], given: tuple[str, ...] = ()
) -> tuple[list[float], tuple[str, ...]]:
    """Class ids for the kept rows: integers as given, names numbered (NLI's order when they are NLI labels)."""
    assert roles.label is not None
    raw = [table.columns[roles.label][i] for i in rows]
    if all(isinstance(v, str) for v in raw):
        found = {v.strip() for v in raw}
        names = given or (NLI_LABELS if found <= set(NLI_LABELS) else tuple(sorted(found)))
        index = {n: k for k, n in enumerate(names)}
        return [float(index[v.strip()]) for v in raw], names
    named = next((k for k, v in enumerate(raw) if isinstance(v, str)), None)
    if named is not None:
        raise DataFormatError(f"{table.row(rows[named])}: label {raw[named]!r} in column {roles.label!r} is a name "
                              "where other rows hold numbers; use one or the other")  # fmt: skip
    ids = [v for v in map(_class_id, raw) if v is not None]
    assert len(ids) == len(raw)  # every kept row holds a class id: _rows dropped the others
    return [float(v) for v in ids], given or tuple(str(k) for k in range(max(ids, default=0) + 1))


def _is_class(value: Any) -> bool:
    return (isinstance(value, str) and bool(value.strip())) or _class_id(value) is not None


def _class_id(value: Any) -> int | None:
    if isinstance(value, bool):
        return int(value)
    number = _number(value)
    return int(number) if number is not None and number >= 0 and number == int(number) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return parse_float(str(value))
    return parse_float(value) if isinstance(value, str) else None


def _hf_split(path: Path, split: str | None) -> tuple[Path, str | None]:
    # `hf:DIR:train` names a DatasetDict's split after the folder (a folder name may itself hold ':').
    if split is None and not path.exists() and ":" in path.name:
        folder, _, split = str(path).rpartition(":")
        return Path(folder), split
    return path, split
