"""`sentence_transformers.cross_encoder.trainer`."""

from sbert.compat.cross_trainer import CrossEncoderTrainer

__all__ = ["CrossEncoderTrainer"]
