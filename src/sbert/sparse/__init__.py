"""Sparse retrieval vectors: SPLADE (an MLM's vocabulary weights, pooled) in sentence-transformers' layout."""

from __future__ import annotations

from sbert.sparse.mlm import MLMTransformer
from sbert.sparse.model import SparseEncoder
from sbert.sparse.splade import SpladePooling

__all__ = ["MLMTransformer", "SparseEncoder", "SpladePooling"]
