"""sentence-transformers 6.2's `sentence_transformers.sentence_transformer.modules` (the older `models`)."""

from sbert.models import (
    CNN,
    LSTM,
    Asym,
    BoW,
    Dense,
    Dropout,
    LayerNorm,
    Normalize,
    Pooling,
    Router,
    StaticEmbedding,
    Transformer,
    WeightedLayerPooling,
    WordEmbeddings,
    WordWeights,
)

__all__ = ["CNN", "LSTM", "Asym", "BoW", "Dense", "Dropout", "LayerNorm", "Normalize", "Pooling", "Router",
           "StaticEmbedding", "Transformer", "WeightedLayerPooling", "WordEmbeddings", "WordWeights"]  # fmt: skip

# A package to the import system, so the reference's legacy one-class paths under it resolve (sbert/legacy_paths.py).
__path__: list[str] = []
