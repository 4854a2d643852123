"""sentence-transformers 6.2's evaluators over sbert's evaluation: the same names, arguments, keys and values.

`from sbert.evaluation import EmbeddingSimilarityEvaluator` replaces `from sentence_transformers.evaluation
import ...`; values are fractions (0-1) keyed `{name}_{metric}`, with `primary_metric`, as there.
"""

from sbert.evaluation.evaluators.base import (
    BaseEvaluator,
    SentenceEvaluator,
    SequentialEvaluator,
    SimilarityFunction,
)
from sbert.evaluation.evaluators.binary import BinaryClassificationEvaluator
from sbert.evaluation.evaluators.labels import LabelAccuracyEvaluator, MSEEvaluatorFromDataFrame
from sbert.evaluation.evaluators.ranking import ParaphraseMiningEvaluator, RerankingEvaluator, TranslationEvaluator
from sbert.evaluation.evaluators.retrieval import InformationRetrievalEvaluator
from sbert.evaluation.evaluators.similarity import EmbeddingSimilarityEvaluator
from sbert.evaluation.evaluators.triplet import MSEEvaluator, TripletEvaluator

__all__ = [
    "BaseEvaluator",
    "BinaryClassificationEvaluator",
    "EmbeddingSimilarityEvaluator",
    "InformationRetrievalEvaluator",
    "LabelAccuracyEvaluator",
    "MSEEvaluator",
    "MSEEvaluatorFromDataFrame",
    "ParaphraseMiningEvaluator",
    "RerankingEvaluator",
    "SentenceEvaluator",
    "SequentialEvaluator",
    "SimilarityFunction",
    "TranslationEvaluator",
    "TripletEvaluator",
]
