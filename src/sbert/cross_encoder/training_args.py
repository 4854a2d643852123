"""`sentence_transformers.cross_encoder.training_args`."""

from sbert.compat.cross_trainer import CrossEncoderTrainingArguments

__all__ = ["CrossEncoderTrainingArguments"]
