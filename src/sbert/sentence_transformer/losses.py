"""`sentence_transformers.sentence_transformer.losses`: sbert.losses under that path."""

from sbert.losses import *  # noqa: F403
from sbert.losses import __all__ as __all__
