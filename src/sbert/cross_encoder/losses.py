"""`sentence_transformers.cross_encoder.losses`: what sbert trains cross-encoders with (losses/pair_logits.py)."""

from sbert.losses.pair_logits import BinaryCrossEntropyLoss, CrossEntropyLoss
from sbert.losses.pair_logits import LogitMSELoss as MSELoss

__all__ = ["BinaryCrossEntropyLoss", "CrossEntropyLoss", "MSELoss"]
