"""Inference-free SPLADE's query side: a fixed weight per vocabulary token (e.g. IDF), no transformer.

    q_j = w_j if token j occurs in the query else 0          (special tokens left out, as trained)

OpenSearch's inference-free models pair it with a SPLADE document encoder behind a Router, so a
query costs one tokenizer call and a table lookup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

import numpy as np
import scipy.sparse
import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer

from sbert.errors import ModelFormatError
from sbert.formats.layout import write_json
from sbert.modules.base import Features, Module, load_weights


class SparseStaticEmbedding(Module):
    """Maps a text to the weights of the distinct tokens it holds (a (B, V) sparse vector)."""

    module_type = "sentence_transformers.sparse_encoder.modules.SparseStaticEmbedding"

    def __init__(self, tokenizer: Any, weight: torch.Tensor, frozen: bool = False) -> None:
        super().__init__()
        if weight.ndim != 1 or weight.shape[0] != len(tokenizer.get_vocab()):
            raise ModelFormatError(f"SparseStaticEmbedding: {tuple(weight.shape)} weights for a vocabulary of "
                                   f"{len(tokenizer.get_vocab())}")  # fmt: skip
        self.tokenizer = tokenizer
        self.weight = torch.nn.Parameter(weight.float(), requires_grad=not frozen)
        self.frozen = frozen

    @property
    def max_seq_length(self) -> int:
        """Tokens kept per input (the tokenizer's own limit)."""
        return int(self.tokenizer.model_max_length)

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """Token ids without special tokens, cut at the tokenizer's limit (as sentence-transformers tokenizes them)."""
        encoded = self.tokenizer(texts, truncation=True, add_special_tokens=False, return_attention_mask=False)
        return [list(row) for row in encoded["input_ids"]]

    def encode_csr(self, texts: list[str]) -> scipy.sparse.csr_matrix:
        """(B, V) float32 CSR: each text's distinct tokens with their weights (zero weights left out)."""
        table = self.weight.detach().cpu().numpy()
        rows = [np.unique(np.asarray(ids, dtype=np.int64)) for ids in self.token_ids(texts)]
        indptr = np.cumsum([0, *(len(r) for r in rows)])
        cols = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
        matrix = scipy.sparse.csr_matrix((table[cols], cols, indptr), shape=(len(texts), len(table)), dtype=np.float32)
        matrix.eliminate_zeros()
        return matrix

    def forward(self, features: Features) -> Features:
        """`sentence_embedding` (B, V) from padded `input_ids` and `attention_mask` (the torch path)."""
        ids, mask = features["input_ids"], features["attention_mask"]
        presence = torch.zeros(ids.shape[0], self.weight.shape[0], dtype=self.weight.dtype, device=ids.device)
        presence.scatter_(1, ids, mask.to(self.weight.dtype))
        features["sentence_embedding"] = presence * self.weight
        return features

    def get_config(self) -> dict[str, Any]:
        """config.json: whether the weights train."""
        return {"frozen": self.frozen}

    def save(self, path: Path) -> None:
        """Tokenizer files, `weight` in model.safetensors, config.json: sentence-transformers' layout."""
        path.mkdir(parents=True, exist_ok=True)
        self.tokenizer.save_pretrained(path)
        save_file({"weight": self.weight.detach().contiguous().cpu()}, str(path / "model.safetensors"))
        write_json(path / self.config_file, self.get_config())

    @classmethod
    def load(cls, path: Path) -> Self:
        """Read a folder `save` (or sentence-transformers) wrote."""
        weights = load_weights(path)
        if "weight" not in weights:
            raise ModelFormatError(f"{path}: SparseStaticEmbedding weights lack 'weight'")
        tokenizer = AutoTokenizer.from_pretrained(path)
        return cls(tokenizer, weights["weight"], bool(cls.read_config(path).get("frozen", False)))
