"""Triplet losses mined inside the batch from class labels (Hermans et al. 2017; Schroff et al. 2015).

One text column and an integer label per row: every row is an anchor; rows of its label are its
positives, the others its negatives. With d the (B, B) distance matrix:

    BatchHardTripletLoss            mean_a relu(max_p d(a,p) - min_n d(a,n) + margin)
    BatchHardSoftMarginTripletLoss  mean_a softplus(max_p d(a,p) - min_n d(a,n))
    BatchAllTripletLoss             mean over the (a,p,n) with a positive hinge of relu(d(a,p) - d(a,n) + margin)
    BatchSemiHardTripletLoss        mean_(a,p) relu(d(a,p) - d(a,n*) + margin), n* the closest negative
                                    farther than p (else the farthest negative)

Euclidean distance by default (margin 5), as sentence-transformers 6.2; batches need several rows of
a label for there to be positives.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.losses.base import Loss
from sbert.vectors.scores import cos_sim

Distances = Callable[[Tensor], Tensor]


class BatchHardTripletLossDistanceFunction:
    """All-pairs distance matrices (B, B) of a batch of embeddings."""

    @staticmethod
    def cosine_distance(embeddings: Tensor) -> Tensor:
        """1 - cosine of every pair of rows."""
        return 1 - cos_sim(embeddings, embeddings)

    @staticmethod
    def euclidean_distance(embeddings: Tensor, squared: bool = False) -> Tensor:
        """L2 distance of every pair of rows (float32 under autocast); the diagonal is exactly 0."""
        with torch.autocast(device_type=embeddings.device.type, enabled=False):
            x = embeddings.float() if embeddings.dtype in (torch.float16, torch.bfloat16) else embeddings
            gram = x @ x.T
        norms = torch.diagonal(gram)
        squares = (norms[None, :] - 2.0 * gram + norms[:, None]).clamp(min=0.0)  # ||a||² - 2ab + ||b||²
        if squared:
            return squares
        zero = squares.eq(0).float()  # sqrt's gradient at 0 is infinite: those entries stay 0 without it
        return (1.0 - zero) * torch.sqrt(squares + zero * 1e-16)

    eucledian_distance = euclidean_distance  # sentence-transformers' older spelling


EUCLIDEAN = BatchHardTripletLossDistanceFunction.euclidean_distance


def _masks(labels: Tensor) -> tuple[Tensor, Tensor]:
    """(positive, negative) (B, B) masks: same label and another row; another label."""
    same = labels[:, None] == labels[None, :]
    return same & ~torch.eye(len(labels), dtype=torch.bool, device=labels.device), ~same


def hardest_gaps(distances: Tensor, labels: Tensor) -> Tensor:
    """(B, 1): each anchor's farthest positive distance minus its closest negative distance."""
    positive, negative = _masks(labels)
    farthest_positive = (distances * positive).max(dim=1, keepdim=True).values
    # Rows that are not negatives are pushed past the row's largest distance before the min.
    pushed = distances + distances.max(dim=1, keepdim=True).values * (~negative)
    return farthest_positive - pushed.min(dim=1, keepdim=True).values


class _LabelTripletLoss(Loss):
    """What the four share: one text column with labels, a distance function, a margin."""

    kinds = ("text",)

    def __init__(self, model: nn.Module | None = None, distance_metric: Distances = EUCLIDEAN,
                 margin: float = 5) -> None:  # fmt: skip
        super().__init__()
        self.name_model(model)
        self.distance_metric, self.triplet_margin = distance_metric, margin

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The loss of the batch's embeddings (one column) under their labels."""
        assert labels is not None
        return self.mined(self.distance_metric(embeddings[0]), labels.view(-1))

    def mined(self, distances: Tensor, labels: Tensor) -> Tensor:
        """The loss from the (B, B) distances and the (B,) labels."""
        raise NotImplementedError


class BatchHardTripletLoss(_LabelTripletLoss):
    """Each anchor with its hardest positive and hardest negative, hinged at the margin."""

    def mined(self, distances: Tensor, labels: Tensor) -> Tensor:
        """Mean relu(hardest gap + margin)."""
        return functional.relu(hardest_gaps(distances, labels) + self.triplet_margin).mean()


class BatchHardSoftMarginTripletLoss(_LabelTripletLoss):
    """Batch-hard with a soft margin: softplus of the hardest gap (no margin to tune)."""

    def __init__(self, model: nn.Module | None = None, distance_metric: Distances = EUCLIDEAN) -> None:
        super().__init__(model, distance_metric)

    def mined(self, distances: Tensor, labels: Tensor) -> Tensor:
        """Mean softplus(hardest gap)."""
        return functional.softplus(hardest_gaps(distances, labels)).mean()


class BatchAllTripletLoss(_LabelTripletLoss):
    """Every valid (anchor, positive, negative), averaged over those that still violate the margin."""

    def mined(self, distances: Tensor, labels: Tensor) -> Tensor:
        """Sum of the positive hinges over their count."""
        positive, negative = _masks(labels)
        anchors, positives = positive.nonzero(as_tuple=True)  # (a, p) pairs, never a B x B x B cube
        hinges = distances[anchors, positives][:, None] - distances[anchors] + self.triplet_margin  # (pairs, B)
        hinges = functional.relu(hinges * negative[anchors])
        return hinges.sum() / ((hinges > 1e-16).sum() + 1e-16)


class BatchSemiHardTripletLoss(_LabelTripletLoss):
    """Each (anchor, positive) with the closest negative farther than the positive (FaceNet's semi-hard)."""

    def mined(self, distances: Tensor, labels: Tensor) -> Tensor:
        """Mean over positive pairs of relu(d(a,p) - d(a,n*) + margin)."""
        positive, negative = _masks(labels)
        sorted_negatives = distances.masked_fill(~negative, torch.inf).sort(dim=1, stable=True).values
        # The first negative strictly farther than each (a, p); a row's own label is +inf, so it always exists.
        first = torch.searchsorted(sorted_negatives.detach().contiguous(), distances.detach().contiguous(),
                                   right=True).clamp(max=len(labels) - 1)  # fmt: skip
        farther = sorted_negatives.gather(1, first)
        row_min = distances.min(dim=1, keepdim=True).values
        farthest = ((distances - row_min) * negative).max(dim=1, keepdim=True).values + row_min
        chosen = torch.where(torch.isfinite(farther), farther, farthest)
        hinges = functional.relu((distances - chosen + self.triplet_margin) * positive)
        return hinges.sum() / positive.sum().clamp(min=1e-16)
