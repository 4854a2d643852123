"""In-batch negatives across every training process: rows gathered from all ranks, gradients flowing back.

Under torchrun each rank embeds its share of the global batch. A batch-level loss (MNRL scores an
anchor against every candidate; CoSENT ranks every pair against every other) must see the whole
batch, or N processes train on N smaller batches. `gather_rows` returns every rank's rows in rank
order; its backward sums each copy's gradient back into the rank that made it. DDP then averages
the ranks' gradients, so:
  - a loss that is a mean over this rank's rows (MNRL: its own anchors against all candidates) gives,
    averaged, the mean over the global batch: the one-process gradient;
  - a loss computed on the whole gathered batch (CoSENT) is the same on every rank; the backward's
    sum over N ranks and DDP's division by N cancel: the one-process gradient again.
Ranks may hold different row counts (a batch that does not divide evenly) or token widths; rows are
padded for the collective and the extra rows cut off. `Loss.gather_across_ranks` (TrainConfig.gather_across_ranks,
`sbert train --no-gather-across-ranks`) turns it off.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

import torch
import torch.distributed as dist
from torch import Tensor
from torch.nn import functional


def world_size() -> int:
    """Processes in the training group (1 without torchrun)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


# Each rank's row count of the step's batch, where the host knows it (the trainer does: every rank plans the whole
# batch); set around the forward by training/step.py. Without it the ranks exchange their shapes first.
_KNOWN_ROWS: ContextVar[Sequence[int] | None] = ContextVar("sbert_known_rows", default=None)


@contextlib.contextmanager
def known_rows(counts: Sequence[int] | None) -> Iterator[None]:
    """Within the block, `gather_rows` takes each rank's row count from `counts` (rank order) instead of asking."""
    token = _KNOWN_ROWS.set(counts)
    try:
        yield
    finally:
        _KNOWN_ROWS.reset(token)


def gather_rows(rows: Tensor, enabled: bool = True, vectors: bool = False) -> tuple[Tensor, int]:
    """Every rank's `rows` concatenated in rank order, with gradients, and where this rank's rows begin.

    Ranks may differ in every dimension (row counts; a token axis padded to each rank's longest text): each is
    zero-padded to the largest for the collective, then cut back to its own row count; the other axes stay
    padded, with zeros (a mask gathered the same way marks the padding as no token). `vectors`: the caller says
    every axis but the first has the same size on every rank (a sentence vector per row, a score per row); then
    the row counts come from `known_rows`, when the trainer gave them, and nothing is read back from the device
    before the collective.
    """
    if not enabled or world_size() == 1:
        return rows, 0
    from torch.distributed.nn.functional import all_gather

    known, rank = _KNOWN_ROWS.get(), dist.get_rank()
    if vectors and known is not None:
        if len(known) != world_size() or known[rank] != rows.shape[0]:  # every rank decides alike, or a bug
            raise RuntimeError(f"gather_rows: rank {rank} holds {rows.shape[0]} rows, the batch plan says {known}")
        counts, largest = list(known), [max(known), *rows.shape[1:]]
    else:
        counts, largest = _exchange_shapes(rows)
    widths = [w for size, most in zip(reversed(rows.shape), reversed(largest), strict=True) for w in (0, most - size)]
    padded = functional.pad(rows, widths)  # zeros after each axis's end; differentiable
    gathered = torch.cat([part[:n] for part, n in zip(all_gather(padded), counts, strict=True)])
    return gathered, sum(counts[:rank])


def _exchange_shapes(rows: Tensor) -> tuple[list[int], list[int]]:
    """Every rank's row count and the largest size of each axis, by one all-gather of the shapes (host reads)."""
    shape = torch.tensor(rows.shape, device=rows.device)
    shapes = [torch.zeros_like(shape) for _ in range(world_size())]
    dist.all_gather(shapes, shape)
    return [int(s[0].item()) for s in shapes], torch.stack(shapes).amax(dim=0).tolist()
