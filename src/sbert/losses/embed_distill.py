"""Embedding distillation (Reimers & Gurevych 2020, "Making Monolingual Sentence Embeddings Multilingual").

    loss = mean over text columns c of  dist(P(student(x_c)), teacher_c)

The teacher's vectors are precomputed and given as each row's label: (B, d) is every column's
target, (B, columns, d) one per column. dist is the mean squared error (`MSELoss`), the mean L2
distance or 1 - cosine (`EmbedDistillLoss`). P is an optional trained Linear to the teacher's width
(`projection_dim`). Inputs: texts with a vector label ("embedding-target" rows).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.errors import SbertError
from sbert.losses.base import Loss

METRICS = ("mse", "l2", "cosine")


def distance(student: Tensor, teacher: Tensor, metric: str) -> Tensor:
    """The batch mean of `metric` between student rows (B, d) and teacher rows (B, d)."""
    if metric == "mse":
        return functional.mse_loss(student, teacher)
    if metric == "l2":
        return torch.linalg.vector_norm(student - teacher, dim=-1).mean()
    return (1 - functional.cosine_similarity(student, teacher, dim=-1)).mean()


class EmbedDistillLoss(Loss):
    """The student's sentence vectors pulled to the teacher's (`EmbedDistillLoss(model, distance_metric="cosine")`)."""

    kinds = ("embedding-target",)

    def __init__(
        self, model: nn.Module | None = None, distance_metric: str = "cosine", projection_dim: int | None = None
    ) -> None:
        super().__init__()
        if distance_metric not in METRICS:
            raise SbertError(f"distance_metric={distance_metric!r}: use one of {', '.join(METRICS)}")
        self.name_model(model)
        self.distance_metric = distance_metric
        self.projection: nn.Linear | None = None
        if projection_dim is not None:
            width = getattr(model, "chain_dimension", None)
            if width is None:
                raise SbertError("projection_dim needs the student model (its width is the projection's input)")
            self.projection = nn.Linear(int(width), projection_dim)

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """Mean over the text columns of the distance to each column's teacher vectors."""
        if labels is None or labels.dim() not in (2, 3):
            raise SbertError("embedding distillation needs the teacher's vectors as labels: (rows, dim) or "
                             "(rows, columns, dim)")  # fmt: skip
        targets = [labels if labels.dim() == 2 else labels[:, c] for c in range(len(embeddings))]
        losses = []
        for student, teacher in zip(embeddings, targets, strict=True):
            moved = self.projection(student) if self.projection is not None else student
            losses.append(distance(moved, teacher.detach().to(moved.dtype), self.distance_metric))
        return torch.stack(losses).mean()


class MSELoss(EmbedDistillLoss):
    """The mean squared error to the teacher's vectors (`MSELoss(model)`, sentence-transformers' distillation)."""

    def __init__(self, model: nn.Module | None = None, projection_dim: int | None = None) -> None:
        super().__init__(model, "mse", projection_dim)
