"""`sentence_transformers.sentence_transformer.training_args` (sbert/compat/training_args.py)."""

from sbert.training_args import BatchSamplers, MultiDatasetBatchSamplers, SentenceTransformerTrainingArguments

__all__ = ["BatchSamplers", "MultiDatasetBatchSamplers", "SentenceTransformerTrainingArguments"]
