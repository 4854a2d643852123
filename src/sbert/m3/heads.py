"""BGE-M3's three heads as one step of the encoder's chain, so every engine runs them with the encoder.

Per token it writes one row [unit h | unit colbert_linear(h) | relu(sparse_linear(h))] (width 2d + 1 for
BGE-M3's d x d ColBERT head) in place of the last hidden state h. The ONNX and OpenVINO graphs (fp32 and int8)
are exported from the chain, so they hold the heads too: one graph gives all three outputs, and the heads'
MatMuls are quantized with the encoder's. The M3 model reads the dense vector from the first token's h part,
the ColBERT vectors from the later tokens' middle part, the lexical weights from the last column.
Against the 24 layers of the encoder (about 12 d^2 multiply-adds a token each) the heads add about d^2 + d.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional

from sbert.modules.base import Features, Module

TOKENS = "token_embeddings"  # the chain's per-token feature (multivector/engine.py reads it)


class M3Heads(Module):
    """The dense (unit h), ColBERT and sparse heads on every token, concatenated; holds the M3 model's own heads."""

    module_type = "sbert.m3.heads.M3Heads"  # never saved: the M3 folder keeps FlagEmbedding's head files

    def __init__(self, colbert: nn.Linear, sparse: nn.Linear) -> None:
        super().__init__()
        self.colbert_linear, self.sparse_linear = colbert, sparse

    def forward(self, features: Features) -> Features:
        """Replace the token states by the three heads' outputs side by side."""
        h = features[TOKENS]
        parts = (functional.normalize(h, dim=-1), functional.normalize(self.colbert_linear(h), dim=-1),
                 torch.relu(self.sparse_linear(h)))  # fmt: skip
        return {**features, TOKENS: torch.cat(parts, dim=-1)}

    def get_config(self) -> dict[str, Any]:
        """The widths (the digest of an exported graph counts them with the weights)."""
        return {"width": self.colbert_linear.in_features, "colbert": self.colbert_linear.out_features}

    def columns(self) -> tuple[slice, slice, int]:
        """Where each output sits in a row: the unit hidden state, the ColBERT vector, the lexical weight."""
        width, colbert = self.colbert_linear.in_features, self.colbert_linear.out_features
        return slice(0, width), slice(width, width + colbert), width + colbert
