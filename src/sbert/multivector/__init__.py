"""Late interaction (ColBERT): multi-vector models in sentence-transformers 6's and PyLate's layouts."""

from sbert.multivector.layout import Expansion, MultiVectorSettings
from sbert.multivector.model import MultiVectorEncoder

__all__ = ["Expansion", "MultiVectorEncoder", "MultiVectorSettings"]
