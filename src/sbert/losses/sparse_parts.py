"""sentence-transformers 6.2's sparse losses: sbert's sentence-vector losses on sparse vectors, and FLOPS.

6.2 trains a SparseEncoder with `SpladeLoss(model, <one of these>(model), ...)`; each is the dense loss of the
same name with 6.2's sparse defaults (MNRL scores by dot product at scale 1), so the engine runs it as it runs
the dense one. `FlopsLoss` names the regularizer SpladeLoss computes.
"""

from __future__ import annotations

from torch import Tensor, nn

from sbert.losses.cosent import CoSENTLoss
from sbert.losses.cosine import CosineSimilarityLoss
from sbert.losses.embed_distill import MSELoss
from sbert.losses.margin_distill import DistillKLDivLoss, MarginMSELoss
from sbert.losses.mnrl import MultipleNegativesRankingLoss
from sbert.losses.options import Similarity
from sbert.losses.triplet import TripletLoss
from sbert.vectors.scores import dot_score, pairwise_angle_sim, pairwise_dot_score


def flops(x: Tensor) -> Tensor:
    """Σ_j (mean over the batch of |x_j|)²: the expected cost of the vectors' posting lists, up to a constant."""
    return x.abs().mean(dim=0).pow(2).sum()


class SparseMultipleNegativesRankingLoss(MultipleNegativesRankingLoss):
    """sentence-transformers 6.2's ranking term of SPLADE: MNRL on dot products, scale 1 (used inside SpladeLoss)."""

    def __init__(
        self,
        model: nn.Module | None = None,
        scale: float = 1.0,
        similarity_fct: Similarity = dot_score,
        gather_across_devices: bool = False,
        directions: tuple[str, ...] = ("query_to_doc",),
        partition_mode: str = "joint",
        hardness_mode: str | None = None,
        hardness_strength: float = 0.0,
    ) -> None:
        super().__init__(model, scale, similarity_fct, gather_across_devices, directions, partition_mode,
                         hardness_mode, hardness_strength)  # fmt: skip


class FlopsLoss(nn.Module):
    """sentence-transformers 6.2's FLOPS regularizer, named inside SpladeLoss (sbert computes it there)."""

    def __init__(self, model: nn.Module | None = None, threshold: int | None = None) -> None:
        super().__init__()
        self.threshold = threshold

    def compute_loss_from_embeddings(self, embeddings: Tensor) -> Tensor:
        """Σ_j (mean over the rows of x_j)² (rows with more than `threshold` active dimensions only)."""
        if self.threshold is not None:
            embeddings = embeddings * ((embeddings != 0).sum(dim=1) > self.threshold).unsqueeze(1)
        return flops(embeddings)


class SparseCoSENTLoss(CoSENTLoss):
    """CoSENT on sparse vectors (6.2's defaults: cosine, scale 20)."""


class SparseCosineSimilarityLoss(CosineSimilarityLoss):
    """Cosine-similarity regression on sparse vectors."""


class SparseTripletLoss(TripletLoss):
    """The triplet margin loss on sparse vectors (6.2's defaults: Euclidean, margin 5)."""


class SparseMSELoss(MSELoss):
    """MSE of the sparse vectors against a teacher's vectors of the same width."""

    def __init__(self, model: nn.Module | None = None) -> None:
        super().__init__(model)


class SparseAnglELoss(SparseCoSENTLoss):
    """AnglE's angle-difference objective on sparse vectors (`SparseAnglELoss(model, scale=20.0)`)."""

    def __init__(self, model: nn.Module | None = None, scale: float = 20.0) -> None:
        super().__init__(model, scale, similarity_fct=pairwise_angle_sim)


class SparseMarginMSELoss(MarginMSELoss):
    """MarginMSE of a teacher's margins on sparse vectors (dot product)."""

    def __init__(self, model: nn.Module | None = None, similarity_fct: Similarity = pairwise_dot_score) -> None:
        super().__init__(model, similarity_fct)


class SparseDistillKLDivLoss(DistillKLDivLoss):
    """KL distillation of a teacher's scores on sparse vectors (6.2's default temperature 2)."""

    def __init__(self, model: nn.Module | None = None, similarity_fct: Similarity = pairwise_dot_score,
                 temperature: float = 2.0, student_temperature: float | None = None,
                 teacher_temperature: float | None = None) -> None:  # fmt: skip
        super().__init__(model, similarity_fct, temperature, student_temperature, teacher_temperature)
