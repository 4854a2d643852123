"""`sentence_transformers.sparse_encoder.evaluation`: the sparse evaluators (sbert/evaluation/evaluators/sparse.py)."""

from sbert.evaluation.evaluators.sparse import (
    SparseBinaryClassificationEvaluator,
    SparseEmbeddingSimilarityEvaluator,
    SparseInformationRetrievalEvaluator,
    SparseMSEEvaluator,
    SparseTripletEvaluator,
)

__all__ = [
    "SparseBinaryClassificationEvaluator",
    "SparseEmbeddingSimilarityEvaluator",
    "SparseInformationRetrievalEvaluator",
    "SparseMSEEvaluator",
    "SparseTripletEvaluator",
]
