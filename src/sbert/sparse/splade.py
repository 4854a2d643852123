"""SPLADE pooling: a weight per vocabulary token, pooled over a text's tokens from its MLM logits.

    w_j = pool_t  log(1 + act(logit_tj))      act: relu, or log1p(relu) ("log1p_relu", OpenSearch's models)

with `max` pooling (SPLADE v2 and later; Formal et al. 2021, arXiv:2109.10086) or `sum` (the
first SPLADE, arXiv:2107.05720). Every weight is >= 0, and most are exactly 0.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from sbert.errors import ModelFormatError
from sbert.modules.base import Features, Module
from sbert.renamed_kwargs import renamed_kwargs

STRATEGIES = ("max", "sum")
ACTIVATIONS = ("relu", "log1p_relu")


def splade_weights(logits: Tensor, activation: str) -> Tensor:
    """log(1 + act(logits)), elementwise; every value >= 0."""
    # logits: (..., V) -> (..., V)
    weights = torch.log1p(torch.relu(logits))
    return torch.log1p(weights) if activation == "log1p_relu" else weights


def pool_padded(logits: Tensor, mask: Tensor, strategy: str, activation: str) -> Tensor:
    """SPLADE vectors of a padded batch: (B, T, V) logits and a (B, T) mask -> (B, V)."""
    weights = splade_weights(logits, activation) * mask.unsqueeze(-1).to(logits.dtype)  # padding weighs 0
    return weights.amax(dim=1) if strategy == "max" else weights.sum(dim=1)


def pool_rows_into(out: Tensor, weights: Tensor, rows: Tensor, strategy: str) -> None:
    """Fold token weights (N, V) into their texts' vectors `out` (B, V); `rows` (N,) says whose each token is."""
    index = rows.unsqueeze(1).expand_as(weights)
    # All weights are >= 0, so a zero start is the identity of `amax` as well as of the sum.
    out.scatter_reduce_(0, index, weights, reduce="amax" if strategy == "max" else "sum")


class SpladePooling(Module):
    """Pools `token_embeddings` (MLM logits, B x T x V) into `sentence_embedding` (B x V) as SPLADE does."""

    module_type = "sentence_transformers.sparse_encoder.modules.SpladePooling"

    @renamed_kwargs(word_embedding_dimension="embedding_dimension")
    def __init__(
        self, pooling_strategy: str = "max", activation_function: str = "relu", embedding_dimension: int | None = None,
        **_ignored: Any,
    ) -> None:  # fmt: skip
        super().__init__()
        if pooling_strategy not in STRATEGIES:
            raise ModelFormatError(f"SpladePooling: pooling_strategy {pooling_strategy!r}; use max or sum")
        if activation_function not in ACTIVATIONS:
            raise ModelFormatError(
                f"SpladePooling: activation_function {activation_function!r}; use {' or '.join(ACTIVATIONS)}"
            )
        self.pooling_strategy = pooling_strategy
        self.activation_function = activation_function
        self.embedding_dimension = embedding_dimension

    def forward(self, features: Features) -> Features:
        """The padded path (training, and backbones whose head cannot be split off)."""
        logits = features["token_embeddings"]
        features["sentence_embedding"] = pool_padded(logits, features["attention_mask"], self.pooling_strategy,
                                                     self.activation_function)  # fmt: skip
        return features

    @property
    def output_dimension(self) -> int | None:
        """The vector's width (the vocabulary), once known: what a chain of modules reads after this one."""
        return self.embedding_dimension

    def get_config(self) -> dict[str, Any]:
        """config.json fields, as sentence-transformers writes them."""
        return {"pooling_strategy": self.pooling_strategy, "activation_function": self.activation_function,
                "embedding_dimension": self.embedding_dimension}  # fmt: skip
