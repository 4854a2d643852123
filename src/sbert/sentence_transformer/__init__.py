"""sentence-transformers 6.2's `sentence_transformers.sentence_transformer` package paths, on sbert's pieces.

`.losses`, `.evaluation`, `.trainer`, `.training_args` answer as there; the classes are sbert's own.
"""

from sbert.compat import SentenceTransformer
from sbert.compat.fit import InputExample
from sbert.compat.trainer import SentenceTransformerTrainer
from sbert.compat.training_args import SentenceTransformerTrainingArguments

__all__ = ["InputExample", "SentenceTransformer", "SentenceTransformerTrainer", "SentenceTransformerTrainingArguments"]
