"""A cross-encoder's contrastive loss: each query's positive scored against negatives, cross-entropy on top.

    MultipleNegativesRankingLoss   CE(scale * act([s(q, p), s(q, n_1), ...]), 0)    rows (query, positive, negatives...)

sentence-transformers 6.2 takes the random negatives from the other rows of each batch at step time.
sbert's engine tokenizes every column ahead of the steps, so the trainer draws them from the other rows
of the whole table when it reads it (compat/cross_trainer.py): as many per query as 6.2 takes from a
batch (`num_negatives`, or every other candidate of a batch when None), from the same kind of rows.
A cross-encoder scores each (query, document) pair alone, so a batch's rows share no work either way
and the cost is the same; what differs is that the draw is made once for the run, not per step.
"""

from __future__ import annotations

import random
import warnings

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.losses.pair_logits import Activation, PairLogitLoss
from sbert.util_runtime import fullname


class MultipleNegativesRankingLoss(PairLogitLoss):
    """Softmax cross-entropy of each query's positive against its hard and drawn negatives (6.2's CE MNRL)."""

    # (query, positive, hard negatives...) text columns, no label; drawn negatives are added as more columns.
    layout = "negatives"

    def __init__(self, model: nn.Module | None = None, num_negatives: int | None = 4, scale: float = 10.0,
                 activation_fn: Activation | None = nn.Sigmoid()) -> None:  # noqa: B008  # fmt: skip
        super().__init__(model, activation_fn or nn.Identity())
        if num_negatives is not None and num_negatives < 0:
            raise ValueError(f"num_negatives must be >= 0 or None, got {num_negatives}")
        self.num_negatives, self.scale = num_negatives, scale

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The columns' logits side by side (the positive first), activated and scaled, against index 0."""
        scores = self.activation_fn(torch.cat([e.reshape(-1, 1) for e in embeddings], dim=1).float())
        if self.scale:
            scores = scores * self.scale
        return functional.cross_entropy(scores, torch.zeros(len(scores), dtype=torch.long, device=scores.device))

    def drawn_per_row(self, batch_size: int, rows: int, candidates: int) -> int:
        """How many random negatives each query gets: what 6.2 takes from a batch of `batch_size` rows."""
        available = (min(batch_size, rows) - 1) * candidates
        return available if self.num_negatives is None else min(self.num_negatives, available)

    def get_config_dict(self) -> dict[str, object]:
        """The settings a model card names."""
        return {"scale": self.scale, "num_negatives": self.num_negatives, "activation_fn": fullname(self.activation_fn)}


class CachedMultipleNegativesRankingLoss(MultipleNegativesRankingLoss):
    """The same loss; 6.2's mini-batches bound its memory, sbert's engine batches pairs by its token budget."""

    def __init__(self, model: nn.Module | None = None, num_negatives: int | None = 4, scale: float = 10.0,
                 activation_fn: Activation | None = nn.Sigmoid(), mini_batch_size: int = 32,  # noqa: B008
                 show_progress_bar: bool = False) -> None:  # fmt: skip
        super().__init__(model, num_negatives, scale, activation_fn)
        if mini_batch_size != 32:
            warnings.warn("CachedMultipleNegativesRankingLoss: sbert's engine batches the pairs by its token budget; "
                          "mini_batch_size is not used", UserWarning, stacklevel=2)  # fmt: skip
        self.mini_batch_size, self.show_progress_bar = mini_batch_size, show_progress_bar


def drawn_negatives(candidates: list[list[str]], per_row: int, seed: int) -> list[list[str]]:
    """For each row, `per_row` candidates of other rows, drawn without replacement (none of its own)."""
    width = len(candidates[0]) if candidates else 0
    pool = [c for row in candidates for c in row]
    rng = random.Random(seed)
    out = []
    for i in range(len(candidates)):
        # Draw among the other rows' cells: positions at or past this row's block skip over it.
        picks = rng.sample(range(len(pool) - width), per_row)
        out.append([pool[p + width if p >= i * width else p] for p in picks])
    return out
