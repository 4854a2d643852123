"""`sentence_transformers.multi_vector_encoder.evaluation`: 6.2's multi-vector evaluators that sbert provides."""

from sbert.evaluation.evaluators.multi_vector import (
    MultiVectorInformationRetrievalEvaluator,
    MultiVectorRerankingEvaluator,
    MultiVectorTripletEvaluator,
)

__all__ = ["MultiVectorInformationRetrievalEvaluator", "MultiVectorRerankingEvaluator", "MultiVectorTripletEvaluator"]
