"""Matryoshka training of a ColBERT model's token vectors (sentence-transformers 6.3's MultiVectorMatryoshkaLoss).

    loss = sum_i w_i * inner(normalize(T[..., :d_i]) for every text column's token matrix T)

The leading d_i dimensions of every token vector, re-normalised, are scored by the wrapped late-interaction
objective (MaxSim), so the first 32 dimensions of each token already retrieve. At inference the same cut
and normalisation apply (`truncate_dim` of the multi-vector evaluators). A cached wrapped objective keeps
its mini-batches: the encoder runs once per mini-batch and every dimension is scored on the cached matrices.
Token pooling during training (6.3's MultiVectorTokenPoolingLoss) is not supported: sbert's multi-vector
encode pools no tokens, so a model trained for pooled documents would be served unpooled.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torch import Tensor, nn
from torch.nn import functional

from sbert.errors import SbertError
from sbert.losses.base import Loss
from sbert.losses.matryoshka import step_indices
from sbert.losses.multivector import cached_token_loss


def shrink_tokens(features: dict[str, Any], dim: int) -> dict[str, Any]:
    """The features with every token vector cut to its first `dim` dimensions and re-normalised."""
    return {**features, "token_embeddings": functional.normalize(features["token_embeddings"][..., :dim], dim=-1)}


class MultiVectorMatryoshkaLoss(Loss):
    """A late-interaction objective summed over nested leading dimensions of the token vectors.

    `MultiVectorMatryoshkaLoss(model, loss, matryoshka_dims, matryoshka_weights=None, n_dims_per_step=-1)` as in
    sentence-transformers 6.3: the dims are kept largest first; with `n_dims_per_step` > 0 each step scores that
    many of them, drawn at random.
    """

    token_level = True
    needs_features = True

    def __init__(self, model: nn.Module | None, loss: Loss, matryoshka_dims: Sequence[int],
                 matryoshka_weights: Sequence[float] | Sequence[int] | None = None,
                 n_dims_per_step: int = -1) -> None:  # fmt: skip
        super().__init__()
        if not getattr(loss, "token_level", False):
            raise SbertError(f"MultiVectorMatryoshkaLoss wraps a multi-vector loss; {type(loss).__name__} is not one")
        # the training contract's width: the token vectors the chain computes, before any truncate_dim
        dims, weights = _checked(matryoshka_dims, matryoshka_weights, getattr(model, "chain_dimension", None))
        self.name_model(model)
        self.inner = loss
        # Largest first, as 6.3 keeps them (its config and model card list them so).
        pairs = sorted(zip(dims, weights, strict=True), key=lambda pair: pair[0], reverse=True)
        self.matryoshka_dims = tuple(d for d, _ in pairs)
        self.matryoshka_weights = tuple(w for _, w in pairs)
        self.n_dims_per_step = n_dims_per_step
        self.kinds = loss.kinds  # type: ignore[misc]
        self.in_batch_negatives = loss.in_batch_negatives  # type: ignore[misc]
        self.needs_model = loss.needs_model  # type: ignore[misc]

    def forward_features(self, features: list[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """Weighted sum of the wrapped loss on each dimension's cut of the token vectors.

        Each cut is taken from the previous one, largest first, as 6.3 does: the same vectors (a prefix of a
        unit vector's prefix, normalised, is the normalised shorter prefix) and the same rounding in the gradients.
        """
        total: Tensor | None = None
        cut = features
        for i in step_indices(len(self.matryoshka_dims), self.n_dims_per_step):
            cut = [shrink_tokens(f, self.matryoshka_dims[i]) for f in cut]
            loss = self.matryoshka_weights[i] * self.inner.forward_features(cut, labels)
            total = loss if total is None else total + loss
        assert total is not None
        return total

    def forward_model(self, model: nn.Module, columns: list[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """A cached wrapped objective: the encoder in its mini-batches, every dimension on the cached matrices."""
        mini_batch = getattr(self.inner, "mini_batch", None)
        if not isinstance(mini_batch, int):
            raise NotImplementedError(f"{type(self.inner).__name__} does not run the encoder itself")
        return cached_token_loss(model, columns, mini_batch, self.forward_features, labels)

    def get_config_dict(self) -> dict[str, Any]:
        """6.3's config: the wrapped loss's name, the dims, their weights and the dims per step."""
        return {"loss": type(self.inner).__name__, "matryoshka_dims": self.matryoshka_dims,
                "matryoshka_weights": self.matryoshka_weights, "n_dims_per_step": self.n_dims_per_step}  # fmt: skip

    def check_model(self, modules: list[nn.Module]) -> None:
        """The wrapped objective's check."""
        self.inner.check_model(modules)

    def save_head(self, path: Path) -> None:
        """Nothing of its own to save."""
        self.inner.save_head(path)


def _checked(dims: Sequence[int], weights: Sequence[float] | None, width: int | None) -> tuple[list[int], list[float]]:
    """The dims and weights (1 each by default), with 6.3's errors for an empty, non-positive or too wide list."""
    if not dims:
        raise ValueError("You must provide at least one dimension in matryoshka_dims.")
    if any(int(d) <= 0 for d in dims):
        raise ValueError("All dimensions passed to a matryoshka loss must be > 0.")
    if weights is None:
        weights = [1.0] * len(dims)
    elif len(weights) != len(dims):
        raise ValueError("matryoshka_weights must be the same length as matryoshka_dims.")
    if width is not None and any(int(d) > width for d in dims):
        raise ValueError(f"Dimensions in matryoshka_dims cannot exceed the model's embedding dimension of {width}.")
    return [int(d) for d in dims], [float(w) for w in weights]


class MultiVectorTokenPoolingLoss(Loss):
    """6.3's training for token pooling: refused in one line (sbert's multi-vector encode pools no tokens)."""

    token_level = True

    def __init__(self, model: nn.Module | None, loss: Loss, token_poolings: Sequence[Any], *,
                 weights: Sequence[float] | Sequence[int] | None = None,
                 n_poolings_per_step: int = -1) -> None:  # fmt: skip
        raise SbertError("MultiVectorTokenPoolingLoss: token pooling is not supported by sbert (its multi-vector "
                         "encode and index keep every token); train without it")  # fmt: skip
