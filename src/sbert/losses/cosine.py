"""Regression objective of SBERT (Reimers & Gurevych 2019, section 3).

    loss = mean((cos(u, v) - y)^2)

y is the gold similarity scaled to [0, 1] (the readers scale STS 0-5 scores by 1/5).
sentence-transformers' `loss_fct` and `cos_score_transformation` replace the squared error and
transform the cosine first. Inputs: pair-score datasets.
"""

from __future__ import annotations

from torch import Tensor, nn
from torch.nn import functional

from sbert.losses.base import Loss


class CosineSimilarityLoss(Loss):
    """Mean squared error between the cosine of a pair and its gold score (`CosineSimilarityLoss(model)`)."""

    kinds = ("pair-score",)

    def __init__(
        self,
        model: nn.Module | None = None,
        # Module instances as defaults, as sentence-transformers' signature has them (both hold no state).
        loss_fct: nn.Module = nn.MSELoss(),  # noqa: B008
        cos_score_transformation: nn.Module = nn.Identity(),  # noqa: B008
    ) -> None:
        super().__init__()
        self.name_model(model)
        self.loss_fct = loss_fct
        self.cos_score_transformation = cos_score_transformation

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """`loss_fct` (MSE) of the transformed cos(u, v) against the labels."""
        assert labels is not None
        cosine = self.cos_score_transformation(functional.cosine_similarity(embeddings[0], embeddings[1], dim=-1))
        return self.loss_fct(cosine, labels.to(cosine.dtype))
