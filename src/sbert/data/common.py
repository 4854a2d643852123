"""The in-memory dataset every reader returns, and line-level error handling."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

from sbert.errors import SbertError

# pair-score: (s1, s2) with a similarity in [0, 1]; pair-class: (s1, s2) with a class id;
# triplet: (anchor, positive, negative[s]); pair: (anchor, positive) with no label; text: single
# sentences (unsupervised objectives); embedding-target: texts with a teacher's vector as label (distillation).
Kind = Literal["pair-score", "pair-class", "pair", "triplet", "text", "distill", "embedding-target"]
NLI_LABELS = ("entailment", "neutral", "contradiction")


class DataFormatError(SbertError):
    """A data file is missing or malformed; the message names the file and line."""


@dataclass(frozen=True)
class Dataset:
    """Examples of one kind: texts[i] is a tuple of sentences, labels[i] its gold value.

    A distillation row's label is a list: one teacher score per document (texts[i][1:]).
    """

    name: str
    kind: Kind
    texts: list[tuple[str, ...]]
    labels: list[Any] | None = None  # floats; a distillation row: a list of floats
    label_names: tuple[str, ...] = ()
    skipped: int = 0
    groups: tuple[str, ...] = ()  # each example's topic, for leave-one-topic-out cross-validation
    source: str = ""  # for a table: its columns and the role each plays, printed before training

    def subset(self, rows: list[int], name: str) -> Dataset:
        """The examples at `rows`, in that order, with their labels and topics."""
        return Dataset(
            name,
            self.kind,
            [self.texts[i] for i in rows],
            [self.labels[i] for i in rows] if self.labels is not None else None,
            self.label_names,
            groups=tuple(self.groups[i] for i in rows) if self.groups else (),
            source=self.source,
        )

    def __len__(self) -> int:
        return len(self.texts)

    def column(self, i: int) -> list[str]:
        """The i-th sentence of every example."""
        return [t[i] for t in self.texts]


@dataclass
class LineChecker:
    """Raises on the first bad line, or (skip_bad) counts it and lets the reader go on."""

    skip_bad: bool = False
    skipped: int = 0
    first_error: str = field(default="")

    def bad(self, path: Path, line_no: int, reason: str) -> None:
        """Report a malformed line."""
        self.bad_row(f"{path}:{line_no}", reason)

    def bad_row(self, where: str, reason: str) -> None:
        """Report a malformed row at `where` (`file:line`, or `file row N` for a columnar file)."""
        message = f"{where}: {reason}"
        if not self.skip_bad:
            raise DataFormatError(message)
        self.skipped += 1
        self.first_error = self.first_error or message


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) for each line of a UTF-8 file, without the line ending."""
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file")
    with path.open("rb") as f:
        yield from iter_lines(f, str(path))


def iter_lines(stream: BinaryIO, name: str) -> Iterator[tuple[int, str]]:
    """(line number, text) for each line of a UTF-8 byte stream; a bad byte names `name` and the line."""
    for line_no, raw in enumerate(stream, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataFormatError(f"{name}:{line_no}: not valid UTF-8 (column {e.start + 1})") from None
        text = text.rstrip("\r\n")
        yield line_no, text.removeprefix("\ufeff") if line_no == 1 else text


def shown(value: Any) -> str:
    """A cell as an error message quotes it: its repr, cut at 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_float(text: str) -> float | None:
    """A finite float, or None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def require(dataset: Dataset) -> Dataset:
    """Refuse an empty dataset: training or scoring on nothing is always a mistake."""
    if not dataset.texts:
        raise DataFormatError(f"{dataset.name}: no examples")
    return dataset
