"""sentence-transformers 6.2's `sentence_transformers.sparse_encoder.modules` (the older `.models`)."""

from sbert.sparse_encoder.models import (
    Asym,
    Dense,
    MLMTransformer,
    Router,
    SparseAutoEncoder,
    SparseStaticEmbedding,
    SpladePooling,
    Transformer,
)

__all__ = ["Asym", "Dense", "MLMTransformer", "Router", "SparseAutoEncoder", "SparseStaticEmbedding", "SpladePooling",
           "Transformer"]  # fmt: skip
