"""`sentence_transformers.sparse_encoder.losses`: the SPLADE objective sbert's engine trains."""

from sbert.losses import FlopsLoss, SparseMultipleNegativesRankingLoss, SpladeLoss

__all__ = ["FlopsLoss", "SparseMultipleNegativesRankingLoss", "SpladeLoss"]
