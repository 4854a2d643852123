"""`sentence_transformers.multi_vector_encoder.losses`: 6.3's ColBERT losses on sbert's late-interaction losses."""

from sbert.losses.multivector_matryoshka import MultiVectorMatryoshkaLoss, MultiVectorTokenPoolingLoss
from sbert.losses.multivector_st import (
    CachedMultiVectorMultipleNegativesRankingLoss,
    MultiVectorDistillKLDivLoss,
    MultiVectorMarginMSELoss,
    MultiVectorMultipleNegativesRankingLoss,
)

__all__ = [
    "CachedMultiVectorMultipleNegativesRankingLoss",
    "MultiVectorDistillKLDivLoss",
    "MultiVectorMarginMSELoss",
    "MultiVectorMatryoshkaLoss",
    "MultiVectorMultipleNegativesRankingLoss",
    "MultiVectorTokenPoolingLoss",
]
