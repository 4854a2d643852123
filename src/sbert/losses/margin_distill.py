"""Distillation of a cross-encoder teacher's scores into the bi-encoder (label: the teacher's scores).

    MarginMSELoss      MSE(s(q, p) - s(q, n_k), teacher margin_k)          (Hofstätter et al. 2020)
    DistillKLDivLoss   T_s² KL(softmax(teacher / T_t) || softmax(s(q, ·) / T_s))   over the candidates

s is the pairwise dot product by default. The label holds, per row, either the margins (one per
negative) or the teacher's scores of the positive and every negative (MarginMSE takes their
differences); DistillKLDiv takes one score per candidate column. Inputs: (query, positive,
negative, ...) with a `label` column.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.errors import SbertError
from sbert.losses.base import Loss
from sbert.losses.options import Similarity
from sbert.vectors.scores import pairwise_dot_score


def _scores(embeddings: list[Tensor], similarity: Similarity) -> Tensor:
    """(B, candidates): the query's similarity to each candidate column."""
    return torch.stack([similarity(embeddings[0], other) for other in embeddings[1:]], dim=1)


def margins_and_targets(scores: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    """(B, negatives) margins of the positive's score (column 0) over each negative's, and the teacher's.

    The labels hold one margin per negative, or the teacher's scores of the positive then each negative.
    """
    margins = scores[:, :1] - scores[:, 1:]
    target = labels.detach().to(margins.dtype).reshape(len(margins), -1)
    if target.shape[1] == margins.shape[1] + 1:  # the teacher's scores: positive first, then each negative
        target = target[:, :1] - target[:, 1:]
    if target.shape != margins.shape:
        raise SbertError(
            f"MarginMSELoss: labels of {target.shape[1]} values per row for {margins.shape[1]} "
            "negatives (one margin per negative, or the positive's and each negative's score)"
        )
    return margins, target


class MarginMSELoss(Loss):
    """MSE between the student's and the teacher's score margins of positive over each negative."""

    kinds = ("triplet",)

    def __init__(self, model: nn.Module | None = None, similarity_fct: Similarity = pairwise_dot_score) -> None:
        super().__init__()
        self.name_model(model)
        self.similarity_fct = similarity_fct

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """Mean squared error of the margins, (B, negatives)."""
        assert labels is not None
        margins, target = margins_and_targets(_scores(embeddings, self.similarity_fct), labels)
        return functional.mse_loss(margins, target)


class DistillKLDivLoss(Loss):
    """KL divergence of the student's softmax over the candidates from the teacher's."""

    kinds = ("triplet",)

    def __init__(self, model: nn.Module | None = None, similarity_fct: Similarity = pairwise_dot_score,
                 temperature: float = 1.0, student_temperature: float | None = None,
                 teacher_temperature: float | None = None) -> None:  # fmt: skip
        super().__init__()
        self.name_model(model)
        self.similarity_fct = similarity_fct
        self.student_temperature = student_temperature if student_temperature is not None else temperature
        self.teacher_temperature = teacher_temperature if teacher_temperature is not None else temperature

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """T_s² · KL(teacher || student), the batch mean."""
        assert labels is not None
        student = torch.log_softmax(_scores(embeddings, self.similarity_fct) / self.student_temperature, dim=1)
        target = labels.detach().to(student.dtype).reshape(student.shape)
        teacher = torch.softmax(target / self.teacher_temperature, dim=1)
        return functional.kl_div(student, teacher, reduction="batchmean") * self.student_temperature**2
