"""Training batches made ahead of the step: padded by a background thread, pinned for the GPU.

The step loop only takes finished batches from a queue and starts their (non-blocking) copy to the
device, so padding and host-to-device copies stay off the path between two GPU steps.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import torch
from torch import Tensor

from sbert.modules import Features
from sbert.modules.transformer import BACKBONE_MASK

Rows = Sequence[Sequence[int]]
Item = TypeVar("Item")
Made = TypeVar("Made")


@dataclass
class StepBatch:
    """One micro-batch of one objective: padded token ids per text column, labels, how many examples.

    With `splits`, `columns` holds one padded batch of every column's rows laid end to end (one
    encoder forward for all columns); `splits` gives each column's row count, in order.
    """

    objective: int
    columns: list[Features]
    labels: Tensor | None
    examples: int
    splits: list[int] | None = None
    rank_rows: list[int] | None = None  # under torchrun: every rank's row count of this batch (losses/gather.py)

    @property
    def shape(self) -> str:
        """Rows x padded width of each forward, for error messages."""
        return ", ".join("x".join(str(d) for d in f["input_ids"].shape) for f in self.columns)

    def to(self, device: torch.device) -> StepBatch:
        """The batch on `device`; from pinned memory the copies do not block the host."""
        pinned = device.type == "cuda"
        columns = [{k: v.to(device, non_blocking=pinned) for k, v in f.items()} for f in self.columns]
        labels = self.labels.to(device, non_blocking=pinned) if self.labels is not None else None
        return StepBatch(self.objective, columns, labels, self.examples, self.splits, self.rank_rows)


def make_batch(
    pads: Sequence[Callable[[Rows], Features]],
    columns: Sequence[Sequence[Sequence[int]]],
    labels: Tensor | None,
    objective: int,
    indices: Sequence[int],
    fuse: bool = False,
    pin: bool = False,
    skips: Sequence[int] | None = None,
) -> StepBatch:
    """Pad the rows `indices` of every column with its own `pads[c]`; `fuse` pads all columns as one batch.

    Columns fuse only when they share one padding (a multi-vector model pads queries and documents apart).

    `skips` (per column): leading prompt positions that pooling leaves out, carried to Pooling as a
    per-row `prompt_length` (a fused batch mixes columns with different prompts).
    """
    rows = [[col[i] for i in indices] for col in columns]
    lengths = [torch.full((len(column),), skip) for column, skip in zip(rows, skips, strict=True)] if skips else None
    if fuse and len(rows) > 1 and all(p == pads[0] for p in pads):
        padded = [pads[0]([r for column in rows for r in column])]
        splits: list[int] | None = [len(column) for column in rows]
        if lengths is not None:
            padded[0]["prompt_length"] = torch.cat(lengths)
    else:
        padded, splits = [pad(column) for pad, column in zip(pads, rows, strict=True)], None
        for features, length in zip(padded, lengths or [], strict=False):
            features["prompt_length"] = length
    chosen = labels[list(indices)] if labels is not None else None
    if pin:
        padded = [{k: v.pin_memory() for k, v in f.items()} for f in padded]
        chosen = chosen.pin_memory() if chosen is not None else None
    return StepBatch(objective, padded, chosen, len(indices), splits)


def with_key_masks(batch: StepBatch, backbone: object) -> StepBatch:
    """Each padded column with its backbone's ready key mask (Transformer.key_mask), built here on the host.

    Made in the prefetch thread, the mask travels with the batch: the forward then reads nothing back from the device.
    """
    key_mask = getattr(backbone, "key_mask", None)
    if key_mask is None:
        return batch
    for features in batch.columns:
        if "attention_mask" not in features:  # an image column: pixels, no token mask
            continue
        ready = key_mask(features["attention_mask"])
        if ready is not None:
            features[BACKBONE_MASK] = ready
    return batch


def split_features(features: Features, splits: list[int]) -> list[Features]:
    """Cut a fused forward's outputs back into one features dict per text column."""
    total = sum(splits)
    parts: list[Features] = [{} for _ in splits]
    for key, value in features.items():
        per_row = isinstance(value, Tensor) and value.shape[:1] == (total,)
        pieces = value.split(splits) if per_row else [value] * len(splits)
        for part, piece in zip(parts, pieces, strict=True):
            part[key] = piece
    return parts


_END = object()


class Prefetcher(Generic[Item, Made]):
    """Iterates `make(item)` over `items` in order, up to `depth` batches ahead, on one thread.

    An exception in `make` is raised by the iterator at that item's turn. `close` stops the
    thread early (a stage cut short by --max-steps).
    """

    def __init__(self, make: Callable[[Item], Made], items: Sequence[Item], depth: int = 4) -> None:
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._fill, args=(make, items), daemon=True, name="sbert-prefetch")
        self._thread.start()

    def _fill(self, make: Callable[[Item], Made], items: Sequence[Item]) -> None:
        try:
            for item in items:
                if self._stop.is_set():
                    return
                self._put(make(item))
        except BaseException as error:  # handed to the consumer, which raises it in its own thread
            self._put(error)
            return
        self._put(_END)

    def _put(self, value: object) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(value, timeout=0.1)
                return
            except queue.Full:
                continue

    def __iter__(self) -> Iterator[Made]:
        """The made batches, in the order of `items`."""
        while True:
            value = self._queue.get()
            if value is _END:
                return
            if isinstance(value, BaseException):
                raise value
            yield value  # type: ignore[misc]

    def close(self) -> None:
        """Stop making batches and wait for the thread."""
        self._stop.set()
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._thread.join()

    def __enter__(self) -> Prefetcher[Item, Made]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
