"""`sentence_transformers.sparse_encoder.losses`: SpladeLoss, CSRLoss and the sparse losses sbert's engine trains."""

from sbert.losses.csr import CSRLoss, CSRReconstructionLoss
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
    "CSRLoss",
    "CSRReconstructionLoss",
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

# A package to the import system, so the reference's legacy one-class paths under it resolve (sbert/legacy_paths.py).
__path__: list[str] = []
