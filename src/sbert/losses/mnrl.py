"""Multiple-negatives ranking loss (Henderson et al. 2017; InfoNCE with in-batch negatives).

    loss = cross-entropy(scale * cos(a_i, c_j), target j = i)

For anchors a_i and candidates c_j = [positives; hard negatives]: every other positive in the
batch (and every hard negative) is a negative for a_i. scale = 20 as in sentence-transformers.
Inputs: (anchor, positive) pairs or (anchor, positive, negative) triplets.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional

from sbert.losses.base import Loss
from sbert.losses.gather import gather_rows


def cosine_matrix(a: Tensor, b: Tensor) -> Tensor:
    """All-pairs cosine (n, m) for a (n, d) and b (m, d)."""
    return functional.normalize(a, dim=-1) @ functional.normalize(b, dim=-1).T


class MultipleNegativesRankingLoss(Loss):
    """Pick each anchor's own positive among all candidates of the batch."""

    kinds = ("triplet", "pair", "pair-score", "pair-class")
    in_batch_negatives = True

    def __init__(self, scale: float = 20.0) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """Cross-entropy over the scaled similarity matrix; pair labels are not used."""
        anchors = embeddings[0]
        # Under torchrun every rank's candidates (losses/gather.py): this rank's anchors against the global batch.
        columns = [gather_rows(c, self.gather_across_ranks, vectors=True) for c in embeddings[1:]]
        candidates, offset = torch.cat([c for c, _ in columns], dim=0), columns[0][1]
        scores = self.scale * cosine_matrix(anchors, candidates)  # (B, B_global * (columns - 1))
        target = torch.arange(len(anchors), device=anchors.device) + offset
        return functional.cross_entropy(scores, target)
