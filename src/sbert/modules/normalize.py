"""L2 normalisation of the sentence vector, so dot product equals cosine."""

from __future__ import annotations

from pathlib import Path
from typing import Self

from torch import Tensor
from torch.nn import functional

from sbert.modules.base import Features, Module


def l2_normalize(vectors: Tensor) -> Tensor:
    """Scale each row to unit length (zero rows stay zero)."""
    # vectors: (B, D) -> (B, D)
    return functional.normalize(vectors, p=2.0, dim=-1)


class Normalize(Module):
    """Normalises `sentence_embedding` to unit length."""

    module_type = "sentence_transformers.models.Normalize"

    def forward(self, features: Features) -> Features:
        """Replace `sentence_embedding` by its unit-length version."""
        features["sentence_embedding"] = l2_normalize(features["sentence_embedding"])
        return features

    def save(self, path: Path) -> None:
        """Nothing to store; the folder exists so the layout matches sentence-transformers'."""
        path.mkdir(parents=True, exist_ok=True)

    @classmethod
    def load(cls, path: Path) -> Self:
        """No config to read."""
        return cls()
