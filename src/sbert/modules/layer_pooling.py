"""WeightedLayerPooling: each token's vector as a learned weighted mean of the Transformer's layers.

The reference's module over `all_layer_embeddings`, the hidden states the Transformer returns when its config
says `output_hidden_states` (built with `Transformer(path, config_kwargs={"output_hidden_states": True})`; the
saved config keeps it). Layers from `layer_start` on (the embedding layer's output counts as layer 0) are
weighted by `layer_weights` (ones at first) and divided by the weights' sum. Without those hidden states it
passes the features on unchanged, as the reference does. A chain that needs them runs padded
(packed_chain.packing_blocker) and in torch only (backends.open_backend).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from sbert.modules.base import Features, Module, renamed_key


class WeightedLayerPooling(Module):
    """`token_embeddings` replaced by the weighted mean of layers `layer_start`..last."""

    module_type = "sentence_transformers.models.WeightedLayerPooling"
    reads_all_layers: ClassVar[bool] = True  # what the backends ask of a chain's modules

    def __init__(
        self, embedding_dimension: int = 0, num_hidden_layers: int = 12, layer_start: int = 4,
        layer_weights: nn.Parameter | None = None, *, word_embedding_dimension: int | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.embedding_dimension = word_embedding_dimension or embedding_dimension
        self.num_hidden_layers, self.layer_start = num_hidden_layers, layer_start
        count = num_hidden_layers + 1 - layer_start
        self.layer_weights = layer_weights if layer_weights is not None else nn.Parameter(torch.ones(count))

    def get_embedding_dimension(self) -> int:
        """The token vectors' width (unchanged)."""
        return self.embedding_dimension

    def forward(self, features: Features) -> Features:
        """The layers' weighted mean as `token_embeddings`; the features as they were without `all_layer_embeddings`."""
        layers = features.get("all_layer_embeddings")
        if layers is None:
            return features
        stacked = torch.stack(tuple(layers))[self.layer_start :]  # (L, B, T, H)
        weights = self.layer_weights.to(stacked.dtype).view(-1, 1, 1, 1)
        features["token_embeddings"] = (weights * stacked).sum(dim=0) / self.layer_weights.sum()
        return features

    def get_config(self) -> dict[str, Any]:
        """The reference's config keys."""
        return {"embedding_dimension": self.embedding_dimension, "layer_start": self.layer_start,
                "num_hidden_layers": self.num_hidden_layers}  # fmt: skip

    @classmethod
    def read_config(cls, path: Path) -> dict[str, Any]:
        """The config, the reference's older key for the width renamed."""
        return renamed_key(super().read_config(path), "word_embedding_dimension", "embedding_dimension")
