"""`sentence_transformers.cross_encoder.losses`: what sbert trains cross-encoders with.

Pair losses (losses/pair_logits.py), MNRL with drawn negatives (losses/pair_negatives.py), MarginMSE
and the list losses (losses/listwise.py, losses/lambda_rank.py).
"""

from sbert.losses.lambda_rank import (
    BaseWeightingScheme,
    LambdaLoss,
    LambdaRankScheme,
    NDCGLoss1Scheme,
    NDCGLoss2PPScheme,
    NDCGLoss2Scheme,
    NoWeightingScheme,
    RankNetLoss,
)
from sbert.losses.listwise import (
    ADRMSELoss,
    ListMLELoss,
    ListNetLoss,
    MarginMSELoss,
    PListMLELambdaWeight,
    PListMLELoss,
)
from sbert.losses.pair_logits import BinaryCrossEntropyLoss, CrossEntropyLoss
from sbert.losses.pair_logits import LogitMSELoss as MSELoss
from sbert.losses.pair_negatives import CachedMultipleNegativesRankingLoss, MultipleNegativesRankingLoss

__all__ = [
    "ADRMSELoss",
    "BaseWeightingScheme",
    "BinaryCrossEntropyLoss",
    "CachedMultipleNegativesRankingLoss",
    "CrossEntropyLoss",
    "LambdaLoss",
    "LambdaRankScheme",
    "ListMLELoss",
    "ListNetLoss",
    "MSELoss",
    "MarginMSELoss",
    "MultipleNegativesRankingLoss",
    "NDCGLoss1Scheme",
    "NDCGLoss2PPScheme",
    "NDCGLoss2Scheme",
    "NoWeightingScheme",
    "PListMLELambdaWeight",
    "PListMLELoss",
    "RankNetLoss",
]

# A package to the import system, so the reference's legacy one-class paths under it resolve (sbert/legacy_paths.py).
__path__: list[str] = []
