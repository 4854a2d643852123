"""Matryoshka representation loss (Kusupati et al., NeurIPS 2022): any objective, on nested prefixes.

    loss = sum_i w_i * inner(normalize(e[..., :d_i]) for every text column)

The leading d_i dimensions of each sentence vector are re-normalised and scored by the wrapped
objective, so the first 64 dimensions alone already make a usable vector. The same computation
as sentence-transformers' MatryoshkaLoss with every dimension used at every step. Objectives with
a head of fixed input width (classification) or that run the encoder themselves (cached MNRL) are
refused: a truncated vector cannot feed them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torch import Tensor, nn
from torch.nn import functional

from sbert.errors import SbertError
from sbert.losses.base import Loss


def parse_matryoshka(spec: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """`"384,256,128:0.5,64"` -> dims (384, 256, 128, 64) and weights (1, 1, 0.5, 1)."""
    dims, weights = [], []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        dim, _, weight = part.partition(":")
        try:
            dims.append(int(dim))
            weights.append(float(weight) if weight else 1.0)
        except ValueError:
            raise SbertError(f"matryoshka={spec!r}: expected DIM[:WEIGHT],... e.g. 384,256,128,64") from None
    if not dims or any(d <= 0 for d in dims) or any(w <= 0 for w in weights):
        raise SbertError(f"matryoshka={spec!r}: needs positive dimensions and weights")
    return tuple(dims), tuple(weights)


def step_indices(count: int, per_step: int) -> list[int]:
    """Which of `count` dims a step scores: all, or `per_step` of them drawn with Python's (seeded) random."""
    every = list(range(count))
    if 0 < per_step < count:
        return sorted(random.sample(every, per_step))
    return every


def shrink(features: dict[str, Any], dim: int) -> dict[str, Any]:
    """The features with the sentence vector cut to its first `dim` dimensions, re-normalised."""
    return {**features, "sentence_embedding": functional.normalize(features["sentence_embedding"][..., :dim], dim=-1)}


class MatryoshkaLoss(Loss):
    """The wrapped objective summed over nested leading dimensions of the sentence vectors.

    `MatryoshkaLoss(model, loss, matryoshka_dims, matryoshka_weights=None, n_dims_per_step=-1)` as in
    sentence-transformers: with `n_dims_per_step` > 0, each step scores that many of the dims, drawn at random.
    """

    def __init__(
        self,
        model: nn.Module | None,
        loss: Loss,
        matryoshka_dims: Sequence[int],
        matryoshka_weights: Sequence[float] | None = None,
        n_dims_per_step: int = -1,
        *,
        width: int | None = None,  # the model's vector width, when no model is named
    ) -> None:
        super().__init__()
        inner = loss
        if inner.needs_model or any(p.requires_grad for p in inner.parameters()):
            raise SbertError(f"--matryoshka cannot wrap {type(inner).__name__}: it has a head or runs the encoder")
        dims = tuple(int(d) for d in matryoshka_dims)
        weights = tuple(float(w) for w in matryoshka_weights) if matryoshka_weights is not None else (1.0,) * len(dims)
        if len(weights) != len(dims) or not dims:
            raise SbertError(f"matryoshka: {len(dims)} dims and {len(weights)} weights must match")
        width = width if width is not None else getattr(model, "chain_dimension", None)
        if width is not None and max(dims) > width:
            raise SbertError(f"--matryoshka {max(dims)} is larger than the model's {width} dimensions")
        self.name_model(model)
        self.inner = inner
        self.dims, self.weights = dims, weights
        self.n_dims_per_step = n_dims_per_step
        self.kinds = inner.kinds  # type: ignore[misc]
        self.needs_features = inner.needs_features  # type: ignore[misc]
        self.in_batch_negatives = inner.in_batch_negatives  # type: ignore[misc]

    def forward_features(self, features: list[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """Weighted sum of the inner loss on each prefix length."""
        total: Tensor | None = None
        for i in step_indices(len(self.dims), self.n_dims_per_step):
            dim, weight = self.dims[i], self.weights[i]
            loss = weight * self.inner.forward_features([shrink(f, dim) for f in features], labels)
            total = loss if total is None else total + loss
        assert total is not None
        return total

    def check_model(self, modules: list[nn.Module]) -> None:
        """The wrapped objective's check."""
        self.inner.check_model(modules)

    def save_head(self, path: Path) -> None:
        """Nothing of its own to save."""
        self.inner.save_head(path)
