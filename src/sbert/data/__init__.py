"""Data readers, one small function per on-disk format, registered by the names the CLI takes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sbert.data.common import NLI_LABELS, DataFormatError, Dataset
from sbert.data.nli import read_nli, read_nli_triplets
from sbert.data.pairs import read_sick, read_sts_dir, read_stsb
from sbert.data.scores import parse_options
from sbert.data.tables import TABLE_FORMATS, from_table, read_table_spec
from sbert.data.text import read_pairs, read_text, read_triplets
from sbert.data.topics import read_topic_pairs

Reader = Callable[[Path, bool], Dataset]
READERS: dict[str, Reader] = {
    "stsb": read_stsb,
    "sick": read_sick,
    "sts": read_sts_dir,
    "topic-pairs": read_topic_pairs,
    "nli": read_nli,
    "nli-triplets": read_nli_triplets,
    "triplets": read_triplets,
    "pairs": read_pairs,
    "text": read_text,
}
# Tables with a header (or a schema): their columns' roles come from names or `columns=` (data/tables.py).
KNOWN_FORMATS = (*READERS, *TABLE_FORMATS)


def load_dataset(spec: str, skip_bad: bool = False) -> Dataset:
    """Read `FORMAT:PATH` or `FORMAT[key=value;...]:PATH` (for example `stsb:data/sts-train.csv`)."""
    name, options, path = split_spec(spec)
    if name in TABLE_FORMATS:
        return read_table_spec(name, path, options, skip_bad, spec)
    reader = READERS.get(name)
    if reader is None:
        raise DataFormatError(f"{spec!r}: unknown format {name!r}; known: {', '.join(KNOWN_FORMATS)}")
    if options:
        if name != "topic-pairs":
            raise DataFormatError(f"{spec!r}: format {name!r} takes no options (topic-pairs takes scale=, labels=)")
        return read_topic_pairs(Path(path).expanduser(), skip_bad, parse_options(options, spec))
    return reader(Path(path).expanduser(), skip_bad)


def with_option(spec: str, key: str, value: str) -> str:
    """`csv:a.csv` + (columns, anchor=q) -> `csv[columns=anchor=q]:a.csv`, keeping options already there."""
    name, options, path = split_spec(spec)
    joined = f"{options};{key}={value}" if options else f"{key}={value}"
    return f"{name}[{joined}]:{path}"


def split_spec(spec: str) -> tuple[str, str, str]:
    """`topic-pairs[scale=0-1]:a.tsv` -> ("topic-pairs", "scale=0-1", "a.tsv"); colons may appear inside [...]."""
    head = spec
    options = ""
    if "[" in spec.partition(":")[0]:
        close = spec.find("]")
        if close < 0:
            raise DataFormatError(f"{spec!r}: '[' without a closing ']'")
        head, options = spec[: spec.index("[")], spec[spec.index("[") + 1 : close]
        spec = head + spec[close + 1 :]
    name, sep, path = spec.partition(":")
    if not sep or not path:
        raise DataFormatError(f"{spec!r}: expected FORMAT:PATH with FORMAT one of {', '.join(KNOWN_FORMATS)}")
    return name, options, path


__all__ = [
    "KNOWN_FORMATS", "NLI_LABELS", "READERS", "DataFormatError", "Dataset", "from_table", "load_dataset", "split_spec",
    "with_option",
]  # fmt: skip
