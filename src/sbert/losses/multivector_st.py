"""sentence-transformers 6.2's multi-vector losses (`multi_vector_encoder.losses`): model first, on sbert's engine.

Each is sbert's late-interaction loss (sbert/losses/multivector.py: MaxSim over the scored tokens) with
6.2's constructor. 6.2's `mini_batch_size` / `score_mini_batch_size` on the uncached losses only bound
memory (the same values); sbert's engine bounds it by its token budget, so they change nothing here.
A `similarity_fct` other than ColBERT's MaxSim is refused in one line.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.errors import SbertError
from sbert.losses.base import Loss
from sbert.losses.margin_distill import margins_and_targets
from sbert.losses.multivector import (
    CachedMultiVectorContrastiveLoss,
    MultiVectorContrastiveLoss,
    MultiVectorDistillLoss,
    maxsim_pairwise,
)
from sbert.multivector.tokens import SCORED
from sbert.similarity import check_maxsim_scorer


class MultiVectorMultipleNegativesRankingLoss(MultiVectorContrastiveLoss):
    """In-batch negatives over MaxSim scores, times `scale` (6.2's default 1.0)."""

    def __init__(self, model: nn.Module | None = None, *, scale: float = 1.0, similarity_fct: Any = None,
                 mini_batch_size: int | None = None, score_mini_batch_size: int | None = None,
                 gather_across_devices: bool = False) -> None:  # fmt: skip
        check_maxsim_scorer(similarity_fct, type(self).__name__)
        super().__init__(scale)
        self.name_model(model)


class CachedMultiVectorMultipleNegativesRankingLoss(CachedMultiVectorContrastiveLoss):
    """The same loss with the encoder run in `mini_batch_size` mini-batches and the gradients cached."""

    def __init__(self, model: nn.Module | None = None, *, scale: float = 1.0, similarity_fct: Any = None,
                 mini_batch_size: int = 32, mini_batch_num_tokens: int | None = None,
                 score_mini_batch_size: int | None = None, gather_across_devices: bool = False,
                 show_progress_bar: bool = False) -> None:  # fmt: skip
        check_maxsim_scorer(similarity_fct, type(self).__name__)
        if mini_batch_num_tokens is not None:
            raise SbertError("CachedMultiVectorMultipleNegativesRankingLoss: mini_batch_num_tokens is not supported "
                             "by sbert; give mini_batch_size")  # fmt: skip
        super().__init__(scale, mini_batch_size)
        self.name_model(model)


class MultiVectorDistillKLDivLoss(MultiVectorDistillLoss):
    """KL(teacher || student) over each query's candidate documents, from the teacher's scores in `label`."""

    # (query, documents..., label) read by position: one teacher score per document
    kinds = ("triplet", "distill")  # type: ignore[assignment]

    def __init__(self, model: nn.Module | None = None, *, similarity_fct: Any = None, temperature: float = 1.0,
                 student_temperature: float | None = None, teacher_temperature: float | None = None,
                 mini_batch_size: int | None = None) -> None:  # fmt: skip
        check_maxsim_scorer(similarity_fct, type(self).__name__)
        super().__init__(temperature, student_temperature, teacher_temperature)
        self.name_model(model)


class MultiVectorMarginMSELoss(Loss):
    """MSE between the student's MaxSim margins (positive over each negative) and the teacher's."""

    kinds = ("triplet",)
    needs_features = True
    token_level = True

    def __init__(self, model: nn.Module | None = None, *, similarity_fct: Any = None,
                 mini_batch_size: int | None = None) -> None:  # fmt: skip
        check_maxsim_scorer(similarity_fct, type(self).__name__)
        super().__init__()
        self.name_model(model)

    def forward_features(self, features: list[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """Margins of (query, positive, negatives...) rows against `label`: margins, or the teacher's scores."""
        if labels is None or len(features) < 3:
            raise SbertError("MultiVectorMarginMSELoss needs (query, positive, negative, ...) rows and a label")
        q, q_mask = features[0]["token_embeddings"], features[0][SCORED]
        scores = torch.stack([maxsim_pairwise(q, q_mask, c["token_embeddings"], c[SCORED]) for c in features[1:]],
                             dim=1)  # fmt: skip
        margins, target = margins_and_targets(scores, labels)
        return functional.mse_loss(margins, target)


__all__ = ["CachedMultiVectorMultipleNegativesRankingLoss", "MultiVectorDistillKLDivLoss", "MultiVectorMarginMSELoss",
           "MultiVectorMultipleNegativesRankingLoss"]  # fmt: skip
