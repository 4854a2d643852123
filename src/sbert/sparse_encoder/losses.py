"""`sentence_transformers.sparse_encoder.losses`: SpladeLoss and the sparse losses sbert's engine trains."""

from sbert.losses.sparse_parts import (
    FlopsLoss,
    SparseAnglELoss,
    SparseCoSENTLoss,
    SparseCosineSimilarityLoss,
    SparseDistillKLDivLoss,
    SparseMarginMSELoss,
    SparseMSELoss,
    SparseMultipleNegativesRankingLoss,
    SparseTripletLoss,
)
from sbert.losses.splade import CachedSpladeLoss, SpladeLoss

__all__ = [
    "CachedSpladeLoss",
    "FlopsLoss",
    "SparseAnglELoss",
    "SparseCoSENTLoss",
    "SparseCosineSimilarityLoss",
    "SparseDistillKLDivLoss",
    "SparseMSELoss",
    "SparseMarginMSELoss",
    "SparseMultipleNegativesRankingLoss",
    "SparseTripletLoss",
    "SpladeLoss",
]
