"""sentence-transformers' module path `sentence_transformers.training_args` (sbert/compat/training_args.py)."""

from sbert.compat.training_args import BatchSamplers, MultiDatasetBatchSamplers, SentenceTransformerTrainingArguments

__all__ = ["BatchSamplers", "MultiDatasetBatchSamplers", "SentenceTransformerTrainingArguments"]
