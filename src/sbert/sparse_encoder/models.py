"""sentence-transformers 6.2's `sentence_transformers.sparse_encoder.models`: SPLADE and CSR built from modules.

    from sbert import SparseEncoder
    from sbert.sparse_encoder.models import SpladePooling, Transformer
    mlm = Transformer("path/to/bert-mlm", transformer_task="fill-mask")
    model = SparseEncoder(modules=[mlm, SpladePooling("max")])

The modules are sbert's own (what `sbert.load` builds from a SparseEncoder folder) with 6.2's
constructors; `SparseEncoder(modules=[...])` takes SPLADE (an MLM module and SpladePooling), inference-free
SPLADE (a Router with a SparseStaticEmbedding query route) and CSR (a dense chain then a SparseAutoEncoder).
"""

from __future__ import annotations

from typing import Any

import torch

from sbert.models import Asym, Dense, MLMTransformer, Router, Transformer
from sbert.sparse.csr import SparseAutoEncoder
from sbert.sparse.splade import SpladePooling
from sbert.sparse.static_query import SparseStaticEmbedding as _SparseStaticEmbedding


class SparseStaticEmbedding(_SparseStaticEmbedding):
    """`SparseStaticEmbedding(tokenizer, weight=None, frozen=False)`: weights start at 1 per token, as in 6.2."""

    def __init__(self, tokenizer: Any, weight: torch.Tensor | None = None, frozen: bool = False) -> None:
        super().__init__(tokenizer, torch.ones(len(tokenizer.get_vocab())) if weight is None else weight, frozen)


__all__ = ["Asym", "Dense", "MLMTransformer", "Router", "SparseAutoEncoder", "SparseStaticEmbedding", "SpladePooling",
           "Transformer"]  # fmt: skip

# A package to the import system, so the reference's legacy one-class paths under it resolve (sbert/legacy_paths.py).
__path__: list[str] = []
