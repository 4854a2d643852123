"""Training tables as sentence-transformers reads them: columns by position, a `label` or `score` column apart.

Every column but the label is a text column, in order (anchor, positive, negatives...); the label is
a score, a class id or a teacher's vector, as the loss takes it. The rows become sbert's Dataset of the
kind the loss trains on, so the engine batches and tokenizes them as any other table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sbert.data.common import Dataset, Kind
from sbert.data.table_sources import in_memory
from sbert.errors import SbertError
from sbert.formats.image_inputs import input_kind
from sbert.losses import Loss
from sbert.util_dataset import LABEL_COLUMNS


def table_columns(data: Any, name: str) -> dict[str, list[Any]]:
    """A table in memory (data/table_sources.in_memory: datasets, pandas, pyarrow, dict of lists) as its columns."""
    if type(data).__name__ == "IterableDataset":
        raise SbertError(f"training set {name!r} is an IterableDataset: pass a datasets.Dataset (sbert streams "
                         "large tables itself: docs/training.md)")  # fmt: skip
    return in_memory(data, f"training set {name!r}").columns


def with_prompts(columns: dict[str, list[Any]], prompts: Any, name: str) -> dict[str, list[Any]]:
    """Text columns with `args.prompts` before each text: one string, per column, or per set (then per column)."""
    if prompts is None or prompts == {}:
        return columns
    if isinstance(prompts, Mapping) and name in prompts:
        prompts = prompts[name]
    elif isinstance(prompts, Mapping) and not set(prompts) & set(columns):
        return columns  # prompts for other training sets
    out = dict(columns)
    for column, values in columns.items():
        prompt = prompts if isinstance(prompts, str) else prompts.get(column) if isinstance(prompts, Mapping) else None
        if prompt and column not in LABEL_COLUMNS:
            out[column] = [prompt + v for v in values]
    return out


def _kind(loss: Loss, texts: int, labelled: bool) -> Kind:
    """The rows' kind for `loss`: what it trains on given the number of text columns and a label."""
    kinds = set(loss.kinds)
    if "embedding-target" in kinds:
        return "embedding-target"
    if labelled and "pair-score" in kinds and texts == 2:
        return "pair-score"
    if labelled and "pair-class" in kinds and texts == 2:
        return "pair-class"
    return "text" if texts == 1 else "pair" if texts == 2 else "triplet"


def _label(value: Any) -> float | list[Any]:
    """A score or class id as a float; a teacher's vector (list, array, tensor) as a list of floats."""
    array = np.asarray(value, dtype=np.float64)
    return float(array) if array.ndim == 0 else array.tolist()


def by_position(data: Any, name: str, loss: Loss, prompts: Any = None) -> Dataset:
    """The sbert Dataset of a training table read as sentence-transformers reads it, for `loss`."""
    columns = with_prompts(table_columns(data, name), prompts, name)
    label = next((c for c in LABEL_COLUMNS if c in columns), None)
    texts = [c for c in columns if c != label]
    if not texts:
        raise SbertError(f"training set {name!r} has no text column (columns: {', '.join(columns)})")
    for column in texts:  # texts, or images for an image-text model (PIL images, paths, arrays)
        bad = next((i for i, v in enumerate(columns[column]) if not isinstance(v, str) and input_kind(v) != "image"),
                   None)  # fmt: skip
        if bad is not None:
            got = type(columns[column][bad]).__name__
            raise SbertError(f"training set {name!r}, column {column!r} row {bad}: expected text, got {got} "
                             "(labels go in a 'label' or 'score' column)")  # fmt: skip
    kind = _kind(loss, len(texts), label is not None)
    rows = list(zip(*(columns[c] for c in texts), strict=True))
    labels = None if label is None else [_label(v) for v in columns[label]]
    if kind in ("pair-score", "pair-class", "embedding-target") and labels is None:
        raise SbertError(f"training set {name!r}: {type(loss).__name__} needs a 'label' or 'score' column "
                         f"(columns: {', '.join(columns)})")  # fmt: skip
    source = f"columns by position: {', '.join(texts)}" + (f"; label: {label}" if label else "")
    return Dataset(name, kind, rows, labels, source=source)
