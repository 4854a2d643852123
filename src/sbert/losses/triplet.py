"""Triplet objective of SBERT (Reimers & Gurevych 2019, section 3; Schroff et al. 2015).

    loss = max(||a - p|| - ||a - n|| + eps, 0)

a, p, n: anchor, positive and negative sentence embeddings. The paper uses Euclidean distance
and eps = 1, `sbert train --objective triplet`'s defaults (losses/__init__.OWN_DEFAULTS); the class
itself takes sentence-transformers' default eps = 5, so `TripletLoss(model)` trains as there. Cosine
distance (1 - cos) and Manhattan distance are options. Inputs: triplet datasets.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.losses.base import Loss


def euclidean(a: Tensor, b: Tensor) -> Tensor:
    """Row-wise L2 distance (B,)."""
    return torch.linalg.vector_norm(a - b, ord=2, dim=-1)


def manhattan(a: Tensor, b: Tensor) -> Tensor:
    """Row-wise L1 distance (B,)."""
    return torch.linalg.vector_norm(a - b, ord=1, dim=-1)


def cosine_distance(a: Tensor, b: Tensor) -> Tensor:
    """Row-wise 1 - cosine similarity (B,)."""
    return 1 - functional.cosine_similarity(a, b, dim=-1)


DISTANCES: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "euclidean": euclidean,
    "manhattan": manhattan,
    "cosine": cosine_distance,
}


def pairwise_euclidean(a: Tensor, b: Tensor) -> Tensor:
    """Row-wise ||a - b + 1e-6|| (B,): torch's pairwise_distance, whose eps sentence-transformers' metric keeps."""
    return functional.pairwise_distance(a, b, p=2)


def pairwise_manhattan(a: Tensor, b: Tensor) -> Tensor:
    """Row-wise L1 distance with torch's pairwise_distance eps (B,)."""
    return functional.pairwise_distance(a, b, p=1)


class TripletDistanceMetric:
    """sentence-transformers' names for the distances: `TripletLoss(model, TripletDistanceMetric.COSINE)`.

    Its Euclidean and Manhattan metrics add torch's 1e-6 to the difference; with Adam a gradient that
    small still moves a near-zero weight, so the drop-in keeps it to train the same weights.
    """

    EUCLIDEAN = staticmethod(pairwise_euclidean)
    MANHATTAN = staticmethod(pairwise_manhattan)
    COSINE = staticmethod(cosine_distance)


class TripletLoss(Loss):
    """Hinge on the distance gap between the anchor-positive and anchor-negative pairs.

    `TripletLoss(model, distance_metric=TripletDistanceMetric.EUCLIDEAN, triplet_margin=5)` as in
    sentence-transformers; sbert's options `distance` (a DISTANCES name) and `margin` take precedence.
    """

    kinds = ("triplet",)

    def __init__(
        self,
        model: nn.Module | None = None,
        distance_metric: Callable[[Tensor, Tensor], Tensor] = pairwise_euclidean,
        triplet_margin: float = 5.0,
        *,
        distance: str | None = None,
        margin: float | None = None,
    ) -> None:
        super().__init__()
        if distance is not None and distance not in DISTANCES:
            raise ValueError(f"distance {distance!r}: known {', '.join(DISTANCES)}")
        self.name_model(model)
        self.distance = DISTANCES[distance] if distance is not None else distance_metric
        self.margin = margin if margin is not None else triplet_margin

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """Mean hinge over the batch."""
        anchor, positive, negative = embeddings[:3]
        gap = self.distance(anchor, positive) - self.distance(anchor, negative)
        return functional.relu(gap + self.margin).mean()
