"""Regression objective of SBERT (Reimers & Gurevych 2019, section 3).

    loss = mean((cos(u, v) - y)^2)

y is the gold similarity scaled to [0, 1] (the readers scale STS 0-5 scores by 1/5).
Inputs: pair-score datasets.
"""

from __future__ import annotations

from torch import Tensor
from torch.nn import functional

from sbert.losses.base import Loss


class CosineSimilarityLoss(Loss):
    """Mean squared error between the cosine of a pair and its gold score."""

    kinds = ("pair-score",)

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """MSE of cos(u, v) against labels in [0, 1]."""
        assert labels is not None
        cosine = functional.cosine_similarity(embeddings[0], embeddings[1], dim=-1)
        return functional.mse_loss(cosine, labels.to(cosine.dtype))
