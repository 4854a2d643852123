"""`sentence_transformers.cross_encoder.evaluation`: the cross-encoder evaluators (sbert/evaluation/evaluators)."""

from sbert.evaluation.evaluators.cross_encoder import (
    CrossEncoderClassificationEvaluator,
    CrossEncoderCorrelationEvaluator,
    CrossEncoderRerankingEvaluator,
)

__all__ = ["CrossEncoderClassificationEvaluator", "CrossEncoderCorrelationEvaluator", "CrossEncoderRerankingEvaluator"]
