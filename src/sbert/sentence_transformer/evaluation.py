"""`sentence_transformers.sentence_transformer.evaluation`: sbert's evaluator classes under that path."""

from sbert.evaluation.evaluators import *  # noqa: F403
from sbert.evaluation.evaluators import __all__ as __all__
