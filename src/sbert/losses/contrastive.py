"""Contrastive losses on labelled pairs (Hadsell, Chopra & LeCun 2006), as sentence-transformers trains them.

    ContrastiveLoss        ½ [y d² + (1 - y) relu(m - d)²], the batch mean (or sum)
    OnlineContrastiveLoss  the same terms over the batch's hard pairs only, summed: positives farther
                           apart than the closest negative, negatives closer than the farthest positive

d is a distance of the two embeddings (cosine distance 1 - cos by default), m the margin (0.5),
y the pair's label (1 similar, 0 not). Inputs: (text, text) pairs with a 0/1 label.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn
from torch.nn import functional

from sbert.losses.base import Loss
from sbert.losses.triplet import cosine_distance, pairwise_euclidean, pairwise_manhattan

Distance = Callable[[Tensor, Tensor], Tensor]


class SiameseDistanceMetric:
    """sentence-transformers' distances for these losses (`ContrastiveLoss(model, SiameseDistanceMetric.EUCLIDEAN)`)."""

    EUCLIDEAN = staticmethod(pairwise_euclidean)
    MANHATTAN = staticmethod(pairwise_manhattan)
    COSINE_DISTANCE = staticmethod(cosine_distance)


class ContrastiveLoss(Loss):
    """Pull labelled-similar pairs together, push the others past the margin."""

    kinds = ("pair-score",)

    def __init__(self, model: nn.Module | None = None, distance_metric: Distance = cosine_distance,
                 margin: float = 0.5, size_average: bool = True) -> None:  # fmt: skip
        super().__init__()
        self.name_model(model)
        self.distance_metric, self.margin, self.size_average = distance_metric, margin, size_average

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The contrastive loss of each pair, averaged (or summed) over the batch."""
        assert labels is not None
        labels = labels.view(-1).float()
        distances = self.distance_metric(embeddings[0], embeddings[1])
        losses = 0.5 * (labels * distances.pow(2) + (1 - labels) * functional.relu(self.margin - distances).pow(2))
        return losses.mean() if self.size_average else losses.sum()


class OnlineContrastiveLoss(ContrastiveLoss):
    """The contrastive loss over the batch's hard positives and hard negatives only (summed)."""

    def __init__(self, model: nn.Module | None = None, distance_metric: Distance = cosine_distance,
                 margin: float = 0.5) -> None:  # fmt: skip
        super().__init__(model, distance_metric, margin, size_average=False)

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """Positives farther than the closest negative, negatives closer than the farthest positive."""
        assert labels is not None
        labels = labels.view(-1)
        distances = self.distance_metric(embeddings[0], embeddings[1])
        negatives, positives = distances[labels == 0], distances[labels == 1]
        hard_negatives = negatives[negatives < (positives.max() if len(positives) else negatives.mean())]
        hard_positives = positives[positives > (negatives.min() if len(negatives) else positives.mean())]
        return hard_positives.pow(2).sum() + functional.relu(self.margin - hard_negatives).pow(2).sum()
