"""Two of sentence-transformers 6.2's batch-shape objectives: global orthogonal regularization and mega-batch margin.

GOR (Zhang et al. 2017), per column of n vectors of width d, off-diagonal cosines s_ij:
mean term   (Σ s_ij / n(n-1))²                 second moment   relu(Σ s_ij² / n(n-1) - 1/d)
weighted and averaged (or summed) over the columns: it spreads the vectors over the sphere.

MegaBatchMargin (Wieting & Gimpel 2018), anchors a_i and positives p_j:
Σ_i [relu(m+ - cos(a_i, p_i)) + relu(max_{j≠i} cos(a_i, p_j) - m-)] / n
with the hardest other positive of the batch as each anchor's negative. Its mini-batched form is
the same loss with the encoder run in mini-batches (losses/cached_mnrl.py's gradient cache).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.errors import SbertError
from sbert.losses.base import Loss
from sbert.losses.cached_mnrl import gradient_cached
from sbert.losses.mnrl import cosine_matrix
from sbert.losses.options import Similarity, refuse_unsupported
from sbert.modules.base import Features
from sbert.vectors.scores import cos_sim


def _diagonal(n: int, device: torch.device) -> Tensor:
    return torch.eye(n, dtype=torch.bool, device=device)


class GlobalOrthogonalRegularizationLoss(Loss):
    """`GlobalOrthogonalRegularizationLoss(model, similarity_fct, mean_weight, second_moment_weight, aggregation)`."""

    kinds = ("triplet", "pair", "pair-score", "pair-class", "text")

    def __init__(self, model: nn.Module | None = None, similarity_fct: Similarity = cos_sim,
                 mean_weight: float | None = 1.0, second_moment_weight: float | None = 1.0,
                 aggregation: str = "mean") -> None:  # fmt: skip
        super().__init__()
        if not mean_weight and not second_moment_weight:
            raise ValueError("At least one of mean_weight or second_moment_weight must be non-zero")
        if aggregation not in ("mean", "sum"):
            raise ValueError(f"aggregation must be 'mean' or 'sum', got '{aggregation}'")
        self.name_model(model)
        self.similarity_fct, self.aggregation = similarity_fct, aggregation
        self.mean_weight, self.second_moment_weight = mean_weight, second_moment_weight

    def terms(self, embeddings: Tensor) -> tuple[Tensor, Tensor]:
        """(mean term, second-moment term) of one column."""
        n = len(embeddings)
        scores = self.similarity_fct(embeddings, embeddings)
        scores = scores.masked_fill(_diagonal(n, scores.device), 0.0)  # each vector with itself left out
        pairs = max(n * (n - 1), 1)
        return (scores.sum() / pairs).pow(2), torch.relu(scores.pow(2).sum() / pairs - 1.0 / embeddings.shape[1])

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The weighted terms, aggregated over the columns (6.2 logs them apart; their sum is the loss)."""
        means, moments = zip(*(self.terms(e) for e in embeddings), strict=True)
        total = torch.zeros((), device=embeddings[0].device)
        for weight, terms in ((self.mean_weight, means), (self.second_moment_weight, moments)):
            if weight:
                stacked = torch.stack(terms)
                total = total + weight * (stacked.sum() if self.aggregation == "sum" else stacked.mean())
        return total


class MegaBatchMarginLoss(Loss):
    """`MegaBatchMarginLoss(model, positive_margin=0.8, negative_margin=0.3, use_mini_batched_version=True, ...)`."""

    kinds = ("pair",)
    in_batch_negatives = True

    def __init__(self, model: nn.Module | None = None, positive_margin: float = 0.8, negative_margin: float = 0.3,
                 use_mini_batched_version: bool = True, mini_batch_size: int = 50,
                 mini_batch_num_tokens: int | None = None, show_progress_bar: bool = False) -> None:  # fmt: skip
        super().__init__()
        refuse_unsupported(type(self).__name__, {"mini_batch_num_tokens": mini_batch_num_tokens},
                           {"mini_batch_num_tokens": None})  # fmt: skip
        if mini_batch_size < 1:
            raise SbertError(f"MegaBatchMarginLoss: mini_batch_size={mini_batch_size} must be >= 1")
        self.name_model(model)
        self.positive_margin, self.negative_margin = positive_margin, negative_margin
        self.mini_batch, self.show_progress_bar = mini_batch_size, show_progress_bar
        self.needs_model = use_mini_batched_version  # type: ignore[misc]

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The margin loss of each anchor's positive and its hardest in-batch negative, the batch mean."""
        if len(embeddings) != 2:
            raise SbertError(f"MegaBatchMarginLoss expects exactly 2 input columns, (anchor, positive), but got "
                             f"{len(embeddings)}")  # fmt: skip
        scores = cosine_matrix(embeddings[0], embeddings[1])
        positive = torch.diagonal(scores)
        hardest = scores.masked_fill(_diagonal(len(positive), scores.device), -torch.inf).max(dim=1).values
        terms = functional.relu(self.positive_margin - positive) + functional.relu(hardest - self.negative_margin)
        return terms.sum() / len(positive)

    def forward_model(self, model: nn.Module, columns: list[Features], labels: Tensor | None) -> Tensor:
        """The same loss, the encoder run `mini_batch_size` rows at a time (gradient cache)."""
        return gradient_cached(model, columns, self.mini_batch, "sentence_embedding", lambda e: self.forward(e, labels))
