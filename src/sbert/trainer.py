"""sentence-transformers' module path `sentence_transformers.trainer` (sbert/compat/trainer.py)."""

from sbert.compat.trainer import SentenceTransformerTrainer

__all__ = ["SentenceTransformerTrainer"]
