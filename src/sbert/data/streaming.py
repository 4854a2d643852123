"""Parquet and `datasets` tables too large to hold: read in pieces, shuffled through a seeded buffer.

`parquet[stream=ROWS]:PATH` and `hf[stream=ROWS]:DIR` (ROWS: the shuffle buffer) open a
`StreamedDataset`. Opening makes one checking pass over the whole table, a piece at a time: every
row gets the same checks as a table read whole (data/tables.py), so a bad row fails before any
training, and the pass counts the good rows (the epoch's length) and gathers the class names.

An epoch's order depends only on (seed, stage, epoch): the pieces in a seeded order (Parquet row
groups, or slices of a memory-mapped Arrow file), each piece's good rows through a shuffle buffer
of ROWS rows. `rows(..., start=N)` replays that order and skips the first N rows without keeping
them, which is how a resumed run continues from the row where it stopped. Memory holds one piece
and the buffer, whatever the table's size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from sbert.data.common import NLI_LABELS, DataFormatError, Dataset
from sbert.data.table_sources import Table, arrow_table, saved_dataset_files

PIECE_ROWS = 8192  # rows converted to Python at a time (a Parquet row group is read in pieces this size)
ARROW_PIECE_ROWS = 65_536  # a `save_to_disk` file is shuffled in slices this size (Parquet: by row group)
SAMPLE_ROWS = 8  # the rows a StreamedDataset keeps in memory, for the checks objectives run before training
Row = tuple[tuple[str, ...], float | None]  # an example's texts and its label (None: the kind has none)
Convert = Callable[[Table, tuple[str, ...]], Dataset]  # a piece's rows and the class names -> checked examples


@dataclass(frozen=True)
class Piece:
    """A run of rows in one file: a Parquet row group, or a slice of a `save_to_disk` Arrow file."""

    file: Path
    group: int  # Parquet row group (-1 for an Arrow file)
    first_row: int  # the table's row number of this piece's first row, from 0
    rows: int
    offset: int = 0  # an Arrow file's piece: its first row's place in the file


@dataclass(frozen=True)
class TableStream:
    """Where a streamed table's rows are and how to turn them into examples (roles, scale, class names)."""

    where: str
    pieces: tuple[Piece, ...]
    convert: Convert
    buffer: int
    label_names: tuple[str, ...] = ()

    def examples(self, piece: Piece) -> Iterator[Dataset]:
        """The checked examples of one piece, a few thousand rows at a time."""
        for first, batch in _read_piece(piece):
            yield self.convert(arrow_table(batch, self.where, first_row=first), self.label_names)

    def rows(self, seed: int, stage: int, epoch: int, start: int = 0) -> Iterator[Row]:
        """Every good row once, in the epoch's seeded order, from the `start`-th on."""
        rng = np.random.default_rng([seed, stage, epoch, 0x5EED])
        order = [self.pieces[i] for i in rng.permutation(len(self.pieces))]
        return islice(_shuffled(self._all_rows(order), self.buffer, rng), start, None)

    def _all_rows(self, pieces: list[Piece]) -> Iterator[Row]:
        for piece in pieces:
            for dataset in self.examples(piece):
                labels: list[float | None] = [None] * len(dataset) if dataset.labels is None else [*dataset.labels]
                yield from zip(dataset.texts, labels, strict=True)


@dataclass(frozen=True)
class StreamedDataset(Dataset):
    """A Dataset whose rows stay on disk: `texts` holds only a sample; `len()` counts every good row."""

    stream: TableStream | None = None
    total: int = 0

    def __len__(self) -> int:
        return self.total

    def subset(self, rows: list[int], name: str) -> Dataset:
        """Refused: a streamed table has no random access (cross-validation folds need a table in memory)."""
        raise DataFormatError(f"{self.name}: a streamed table cannot be split into folds; read it whole (no stream=)")


def open_stream(fmt: str, file: Path, split: str | None, where: str, convert: Convert, buffer: int) -> StreamedDataset:
    """Check every row of a Parquet file/folder or a `save_to_disk` folder once, and open it as a stream.

    `convert(table, class_names)` turns a piece's rows into checked examples (data/tables.py).
    """
    if buffer < 1:
        raise DataFormatError(f"{where}: stream={buffer} must be a buffer of at least 1 row")
    pieces = _parquet_pieces(file) if fmt == "parquet" else _arrow_pieces(file, split)
    stream = TableStream(where, pieces, convert, buffer)
    total, skipped, names, sample, kind, source = 0, 0, set(), None, None, ""
    for piece in pieces:
        for dataset in stream.examples(piece):
            total, skipped = total + len(dataset), skipped + dataset.skipped
            names.update(_classes(dataset))
            if sample is None and len(dataset):
                sample, kind, source = dataset, dataset.kind, dataset.source
    if sample is None or kind is None:
        raise DataFormatError(f"{where}: no examples")
    label_names = _label_names(names) if kind == "pair-class" else ()
    stream = replace(stream, label_names=label_names)
    head = next(stream.examples(pieces[0])) if kind == "pair-class" else sample  # labels numbered as all pieces are
    keep = min(SAMPLE_ROWS, len(head))
    labels = head.labels[:keep] if head.labels is not None else None
    return StreamedDataset(where, kind, head.texts[:keep], labels, label_names, skipped, source=source + "; streamed",
                           stream=stream, total=total)  # fmt: skip


def _classes(dataset: Dataset) -> set[str]:
    """The class names a piece's rows use (names as given, integer classes as their numbers)."""
    if dataset.kind != "pair-class" or dataset.labels is None:
        return set()
    return {dataset.label_names[int(y)] for y in dataset.labels}


def _label_names(found: set[str]) -> tuple[str, ...]:
    # The rule a table read whole follows: NLI's names in NLI's order, integers as numbered, others sorted.
    if found <= set(NLI_LABELS):
        return NLI_LABELS
    if all(n.isdigit() for n in found):
        return tuple(str(k) for k in range(max(map(int, found)) + 1))
    return tuple(sorted(found))


def _shuffled(rows: Iterator[Row], size: int, rng: np.random.Generator) -> Iterator[Row]:
    """A seeded shuffle buffer: each incoming row replaces, and sends on, a random one of `size` held rows."""
    held: list[Row] = []
    for row in rows:
        if len(held) < size:
            held.append(row)
            continue
        j = int(rng.integers(size))
        yield held[j]
        held[j] = row
    for j in rng.permutation(len(held)).tolist():
        yield held[j]


def _parquet_pieces(path: Path) -> tuple[Piece, ...]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = sorted(path.rglob("*.parquet")) if path.is_dir() else [path]
    if not files or not files[0].is_file():
        raise DataFormatError(f"{path}: no such file" if not path.is_dir() else f"{path}: no .parquet files in it")
    pieces, first = [], 0
    for file in files:
        try:
            meta = pq.ParquetFile(file).metadata
        except (OSError, pa.ArrowInvalid) as e:
            raise DataFormatError(f"{file}: not a Parquet file ({str(e).splitlines()[0]})") from None
        for group in range(meta.num_row_groups):
            rows = meta.row_group(group).num_rows
            pieces.append(Piece(file, group, first, rows))
            first += rows
    return tuple(pieces)


def _arrow_pieces(path: Path, split: str | None) -> tuple[Piece, ...]:
    pieces, first = [], 0
    for file in saved_dataset_files(path, split):
        rows = _arrow_rows(file)
        step = ARROW_PIECE_ROWS
        pieces += [Piece(file, -1, first + s, min(step, rows - s), s) for s in range(0, rows, step)]
        first += rows
    return tuple(pieces)


def _read_piece(piece: Piece) -> Iterator[tuple[int, Any]]:
    """(table row number of the first row, Arrow record batch) for each part of a piece."""
    if piece.group >= 0:
        import pyarrow.parquet as pq

        first = piece.first_row
        for batch in pq.ParquetFile(piece.file).iter_batches(batch_size=PIECE_ROWS, row_groups=[piece.group]):
            yield first, batch
            first += batch.num_rows
        return
    import pyarrow as pa

    # Memory-mapped and unmapped again after the piece: only these rows' pages are read, and they
    # do not stay resident (a mapping kept open would hold every page the epoch touched).
    with pa.memory_map(str(piece.file)) as source:
        rows = _arrow_stream(pa, source, piece.file).slice(piece.offset, piece.rows)
        for start in range(0, piece.rows, PIECE_ROWS):
            yield piece.first_row + start, rows.slice(start, PIECE_ROWS)


def _arrow_rows(file: Path) -> int:
    import pyarrow as pa

    with pa.memory_map(str(file)) as source:
        return int(_arrow_stream(pa, source, file).num_rows)


def _arrow_stream(pa: Any, source: Any, file: Path) -> Any:
    try:
        return pa.ipc.open_stream(source).read_all()
    except pa.ArrowInvalid as e:
        raise DataFormatError(f"{file}: not Arrow data as save_to_disk writes it ({e})") from None
