"""sentence-transformers 6.2's `sentence_transformers.sparse_encoder` package paths, on sbert's pieces.

`SparseEncoder` is the drop-in class; `.models`, `.losses`, `.evaluation`, `.trainer`, `.training_args` answer as there.
"""

from sbert.compat import SparseEncoder
from sbert.compat.model_card import SparseEncoderModelCardData
from sbert.compat.sparse_trainer import SparseEncoderTrainer, SparseEncoderTrainingArguments

__all__ = ["SparseEncoder", "SparseEncoderModelCardData", "SparseEncoderTrainer", "SparseEncoderTrainingArguments"]
