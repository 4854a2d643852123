"""`sentence_transformers.sparse_encoder.evaluation`: the sparse evaluators (sbert/evaluation/evaluators/sparse.py)."""

from sbert.evaluation.evaluators.ranking import ReciprocalRankFusionEvaluator
from sbert.evaluation.evaluators.sparse import (
    SparseBinaryClassificationEvaluator,
    SparseEmbeddingSimilarityEvaluator,
    SparseInformationRetrievalEvaluator,
    SparseMSEEvaluator,
    SparseRerankingEvaluator,
    SparseTranslationEvaluator,
    SparseTripletEvaluator,
)

__all__ = [
    "ReciprocalRankFusionEvaluator",
    "SparseBinaryClassificationEvaluator",
    "SparseEmbeddingSimilarityEvaluator",
    "SparseInformationRetrievalEvaluator",
    "SparseMSEEvaluator",
    "SparseRerankingEvaluator",
    "SparseTranslationEvaluator",
    "SparseTripletEvaluator",
]

# A package to the import system, so the reference's legacy one-class paths under it resolve (sbert/legacy_paths.py).
__path__: list[str] = []
