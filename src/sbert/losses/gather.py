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

import torch
import torch.distributed as dist
from torch import Tensor
from torch.nn import functional


def world_size() -> int:
    """Processes in the training group (1 without torchrun)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def gather_rows(rows: Tensor, enabled: bool = True) -> tuple[Tensor, int]:
    """Every rank's `rows` concatenated in rank order, with gradients, and where this rank's rows begin.

    Ranks may differ in every dimension (row counts; a token axis padded to each rank's longest text): each is
    zero-padded to the largest for the collective, then cut back to its own row count; the other axes stay
    padded, with zeros (a mask gathered the same way marks the padding as no token).
    """
    if not enabled or world_size() == 1:
        return rows, 0
    from torch.distributed.nn.functional import all_gather

    shape = torch.tensor(rows.shape, device=rows.device)
    shapes = [torch.zeros_like(shape) for _ in range(world_size())]
    dist.all_gather(shapes, shape)
    largest = torch.stack(shapes).amax(dim=0).tolist()
    widths = [w for size, most in zip(reversed(rows.shape), reversed(largest), strict=True) for w in (0, most - size)]
    padded = functional.pad(rows, widths)  # zeros after each axis's end; differentiable
    counts = [int(s[0].item()) for s in shapes]
    gathered = torch.cat([part[:n] for part, n in zip(all_gather(padded), counts, strict=True)])
    return gathered, sum(counts[: dist.get_rank()])
