"""The BERT cross-encoder baseline: both sentences in one input, a regression head on [CLS].

    score(a, b) = sigmoid(w . h_[CLS]([CLS] a [SEP] b [SEP]) + c)   in [0, 1]

Trained (`reproduce/cross_encoder_fit.py`, beside the other experiment runners, so that this
module, which evaluation imports, imports no training code) with binary cross-entropy against
gold similarities scaled to [0, 1], as sentence-transformers' CrossEncoder does for one label.
Accurate, but every pair needs its own forward pass: finding the closest pair among n sentences
costs n(n-1)/2 passes (the paper's 65 hours for n = 10,000), which `benchmarks/pair_search_cost.py`
measures on this machine.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from sbert import layout
from sbert.errors import ModelFormatError
from sbert.loading import resolve_model_dir
from sbert.modules import Transformer

HEAD_FILE = "cross_encoder_head.safetensors"


class CrossEncoder(nn.Module):
    """A transformer reading the pair jointly, and a linear head on its first token."""

    def __init__(self, transformer: Transformer) -> None:
        super().__init__()
        self.transformer = transformer
        self.head = nn.Linear(transformer.embedding_dimension, 1)

    @classmethod
    def from_transformer(cls, name_or_path: str | os.PathLike[str], max_seq_length: int | None = None) -> CrossEncoder:
        """A new cross-encoder (fresh head) on a Hugging Face encoder (max_seq_length: its own limit)."""
        return cls(Transformer.from_pretrained(resolve_model_dir(name_or_path), max_seq_length=max_seq_length))

    def tokenize_pairs(self, pairs: Sequence[tuple[str, str]]) -> dict[str, Tensor]:
        """Padded joint inputs [CLS] a [SEP] b [SEP], truncated to max_seq_length."""
        first, second = [p[0] for p in pairs], [p[1] for p in pairs]
        limit = self.transformer.max_seq_length
        encoded = self.transformer.tokenizer(
            first, second, truncation=True, padding=True, max_length=limit, return_tensors="pt"
        )
        device = self.head.weight.device
        return {k: v.to(device) for k, v in encoded.items()}

    def forward(self, features: dict[str, Tensor]) -> Tensor:
        """Logits (B,) of the pair scores."""
        tokens = self.transformer(dict(features))["token_embeddings"]  # (B, T, H)
        return self.head(tokens[:, 0]).squeeze(-1)

    @torch.inference_mode()
    def predict(self, pairs: Sequence[tuple[str, str]], batch_size: int = 32) -> np.ndarray:
        """Scores in [0, 1], in input order (pairs are batched by length to cut padding)."""
        self.eval()
        order = np.argsort([len(a) + len(b) for a, b in pairs], kind="stable")
        out = np.empty(len(pairs), dtype=np.float32)
        for start in range(0, len(pairs), batch_size):
            rows = order[start : start + batch_size]
            logits = self(self.tokenize_pairs([pairs[i] for i in rows]))
            out[rows] = torch.sigmoid(logits).float().cpu().numpy()
        return out

    def save(self, path: str | os.PathLike[str]) -> None:
        """The transformer folder plus the head, written atomically."""
        with layout.atomic_directory(path) as tmp:
            self.transformer.save(tmp)
            save_file(
                {k: v.detach().cpu().contiguous() for k, v in self.head.state_dict().items()}, str(tmp / HEAD_FILE)
            )

    @classmethod
    def load(cls, path: str | os.PathLike[str], device: str | None = None) -> CrossEncoder:
        """A cross-encoder saved by `save`."""
        head = Path(path) / HEAD_FILE
        if not head.is_file():
            raise ModelFormatError(f"{path}: no {HEAD_FILE}; not a cross-encoder saved by sbert")
        model = cls(Transformer.load(Path(path)))
        model.head.load_state_dict(load_file(str(head)))
        return model.to(device or "cpu")
