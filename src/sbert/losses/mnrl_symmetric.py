"""Multiple-negatives ranking in both directions (sentence-transformers' MultipleNegativesSymmetricRankingLoss).

    loss = ½ [CE(scale * sim(a_i, c_j), j = i) + CE(scale * sim(p_i, a_j), j = i)]

The first term is MNRL (each anchor picks its positive among all candidates); the second lets each
positive pick its anchor among all anchors of the batch (a question from its answer). Each direction
has its own softmax, as 6.2's `partition_mode="per_direction"`. Inputs: (anchor, positive) pairs, or
tuples whose negatives join the first term only.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.losses.gather import gather_rows
from sbert.losses.mnrl import MultipleNegativesRankingLoss
from sbert.losses.options import Similarity
from sbert.vectors.scores import cos_sim


class MultipleNegativesSymmetricRankingLoss(MultipleNegativesRankingLoss):
    """MNRL plus its mirror, positives against anchors (`MultipleNegativesSymmetricRankingLoss(model, scale=20.0)`)."""

    def __init__(self, model: nn.Module | None = None, scale: float = 20.0, similarity_fct: Similarity = cos_sim,
                 gather_across_devices: bool = False) -> None:  # fmt: skip
        super().__init__(model, scale, similarity_fct, gather_across_devices)

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The mean of the anchor-to-candidate and positive-to-anchor cross-entropies."""
        forward = super().forward(embeddings, labels)
        # Under torchrun: this rank's positives against every rank's anchors (losses/gather.py).
        anchors, offset = gather_rows(embeddings[0], self.gather_across_ranks, vectors=True)
        positives = embeddings[1]
        scores = self.scale * self.scores(positives, anchors)  # (B, B_global)
        target = torch.arange(len(positives), device=positives.device) + offset
        return (forward + functional.cross_entropy(scores, target)) / 2
