"""`sentence_transformers.sparse_encoder.trainer`."""

from sbert.compat.sparse_trainer import SparseEncoderTrainer

__all__ = ["SparseEncoderTrainer"]
