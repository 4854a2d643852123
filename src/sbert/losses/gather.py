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
Ranks may hold different row counts (a batch that does not divide evenly); rows are padded for the
collective and the padding cut off. `Loss.gather_across_ranks` (TrainConfig.gather_across_ranks,
`sbert train --no-gather-across-ranks`) turns it off.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import Tensor


def world_size() -> int:
    """Processes in the training group (1 without torchrun)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def gather_rows(rows: Tensor, enabled: bool = True) -> tuple[Tensor, int]:
    """Every rank's `rows` concatenated in rank order, with gradients, and where this rank's rows begin."""
    if not enabled or world_size() == 1:
        return rows, 0
    from torch.distributed.nn.functional import all_gather

    count = torch.tensor([rows.shape[0]], device=rows.device)
    counts = [torch.zeros_like(count) for _ in range(world_size())]
    dist.all_gather(counts, count)
    sizes = [int(c.item()) for c in counts]
    padded = torch.zeros((max(sizes), *rows.shape[1:]), dtype=rows.dtype, device=rows.device)
    padded = padded.index_put((torch.arange(rows.shape[0], device=rows.device),), rows)  # keeps rows' graph
    parts = all_gather(padded)
    gathered = torch.cat([part[:n] for part, n in zip(parts, sizes, strict=True)])
    return gathered, sum(sizes[: dist.get_rank()])
