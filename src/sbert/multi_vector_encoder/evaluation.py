"""`sentence_transformers.multi_vector_encoder.evaluation`: 6.2's multi-vector evaluators that sbert provides."""

from sbert.evaluation.evaluators.multi_vector import (
    MultiVectorInformationRetrievalEvaluator,
    MultiVectorRerankingEvaluator,
    MultiVectorTripletEvaluator,
)
from sbert.evaluation.evaluators.multi_vector_distill import MultiVectorDistillationEvaluator

__all__ = ["MultiVectorDistillationEvaluator", "MultiVectorInformationRetrievalEvaluator",
           "MultiVectorRerankingEvaluator", "MultiVectorTripletEvaluator"]  # fmt: skip
