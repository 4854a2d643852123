"""The cross-encoder kind: a sequence-classification transformer that scores a pair of texts at once."""

from sbert.cross_encoder.model import ACTIVATIONS, CrossEncoder

__all__ = ["ACTIVATIONS", "CrossEncoder"]
