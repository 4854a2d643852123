"""`sentence_transformers.cross_encoder.evaluation`: the cross-encoder evaluators (sbert/evaluation/evaluators)."""

from sbert.evaluation.evaluators.cross_encoder import (
    CrossEncoderClassificationEvaluator,
    CrossEncoderCorrelationEvaluator,
    CrossEncoderRerankingEvaluator,
)
from sbert.evaluation.evaluators.cross_encoder_legacy import (
    CEBinaryAccuracyEvaluator,
    CEBinaryClassificationEvaluator,
    CECorrelationEvaluator,
    CEF1Evaluator,
    CERerankingEvaluator,
    CESoftmaxAccuracyEvaluator,
)

__all__ = [
    "CEBinaryAccuracyEvaluator",
    "CEBinaryClassificationEvaluator",
    "CECorrelationEvaluator",
    "CEF1Evaluator",
    "CERerankingEvaluator",
    "CESoftmaxAccuracyEvaluator",
    "CrossEncoderClassificationEvaluator",
    "CrossEncoderCorrelationEvaluator",
    "CrossEncoderRerankingEvaluator",
]

# A package to the import system, so the reference's legacy one-class paths under it resolve (sbert/legacy_paths.py).
__path__: list[str] = []
