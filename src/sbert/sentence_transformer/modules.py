"""sentence-transformers 6.2's `sentence_transformers.sentence_transformer.modules` (the older `models`)."""

from sbert.models import Asym, Dense, LayerNorm, Normalize, Pooling, Router, StaticEmbedding, Transformer

__all__ = ["Asym", "Dense", "LayerNorm", "Normalize", "Pooling", "Router", "StaticEmbedding", "Transformer"]
