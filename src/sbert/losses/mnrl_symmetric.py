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

from sbert.losses.cached_mnrl import CachedMultipleNegativesRankingLoss
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
        return (super().forward(embeddings, labels) + mirrored(self, embeddings)) / 2


def mirrored(loss: MultipleNegativesRankingLoss, embeddings: list[Tensor]) -> Tensor:
    """The second term: each positive picks its own anchor among the batch's anchors."""
    # Under torchrun: this rank's positives against every rank's anchors (losses/gather.py).
    anchors, offset = gather_rows(embeddings[0], loss.gather_across_ranks, vectors=True)
    positives = embeddings[1]
    scores = loss.scale * loss.scores(positives, anchors)  # (B, B_global)
    target = torch.arange(len(positives), device=positives.device) + offset
    return functional.cross_entropy(scores, target)


class CachedMultipleNegativesSymmetricRankingLoss(CachedMultipleNegativesRankingLoss):
    """MNSRL with the encoder run in mini-batches (the gradient cache): the same loss and gradients, less memory."""

    def __init__(self, model: nn.Module | None = None, scale: float = 20.0, similarity_fct: Similarity = cos_sim,
                 mini_batch_size: int = 32, mini_batch_num_tokens: int | None = None,
                 gather_across_devices: bool = False, show_progress_bar: bool = False) -> None:  # fmt: skip
        super().__init__(model, scale, similarity_fct, mini_batch_size, mini_batch_num_tokens, gather_across_devices,
                         show_progress_bar=show_progress_bar)  # fmt: skip

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The mean of the anchor-to-candidate and positive-to-anchor cross-entropies."""
        return (super().forward(embeddings, labels) + mirrored(self, embeddings)) / 2
