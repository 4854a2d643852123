"""`sentence_transformers.sparse_encoder.losses`: SpladeLoss and the sparse losses sbert's engine trains."""

from sbert.losses.sparse_parts import (
    FlopsLoss,
    SparseCoSENTLoss,
    SparseCosineSimilarityLoss,
    SparseMSELoss,
    SparseMultipleNegativesRankingLoss,
    SparseTripletLoss,
)
from sbert.losses.splade import SpladeLoss

__all__ = [
    "FlopsLoss",
    "SparseCoSENTLoss",
    "SparseCosineSimilarityLoss",
    "SparseMSELoss",
    "SparseMultipleNegativesRankingLoss",
    "SparseTripletLoss",
    "SpladeLoss",
]
