"""`sentence_transformers.sparse_encoder.training_args`."""

from sbert.compat.sparse_trainer import SparseEncoderTrainingArguments

__all__ = ["SparseEncoderTrainingArguments"]
