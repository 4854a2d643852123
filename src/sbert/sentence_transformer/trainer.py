"""`sentence_transformers.sentence_transformer.trainer` (sbert/compat/trainer.py)."""

from sbert.compat.trainer import SentenceTransformerTrainer

__all__ = ["SentenceTransformerTrainer"]
