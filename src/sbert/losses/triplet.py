"""Triplet objective of SBERT (Reimers & Gurevych 2019, section 3; Schroff et al. 2015).

    loss = max(||a - p|| - ||a - n|| + eps, 0)

a, p, n: anchor, positive and negative sentence embeddings. The paper uses Euclidean distance
and eps = 1, which are the defaults here (sentence-transformers defaults to eps = 5). Cosine
distance (1 - cos) and Manhattan distance are options. Inputs: triplet datasets.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
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


class TripletLoss(Loss):
    """Hinge on the distance gap between the anchor-positive and anchor-negative pairs."""

    kinds = ("triplet",)

    def __init__(self, distance: str = "euclidean", margin: float = 1.0) -> None:
        super().__init__()
        if distance not in DISTANCES:
            raise ValueError(f"distance {distance!r}: known {', '.join(DISTANCES)}")
        self.distance = DISTANCES[distance]
        self.margin = margin

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """Mean hinge over the batch."""
        anchor, positive, negative = embeddings
        gap = self.distance(anchor, positive) - self.distance(anchor, negative)
        return functional.relu(gap + self.margin).mean()
