"""Training objectives, one per file, registered by the names `sbert train --objective` takes.

Each class also answers sentence-transformers 6.2's constructor, model first (`MultipleNegativesRankingLoss(model)`),
so `from sbert.losses import ...` replaces `from sentence_transformers.losses import ...`.
"""

from __future__ import annotations

import difflib
from typing import Any

from sbert.data.common import Dataset
from sbert.errors import SbertError
from sbert.losses.adaptive_layer import AdaptiveLayerLoss, Matryoshka2dLoss
from sbert.losses.angle import AnglELoss
from sbert.losses.base import Loss
from sbert.losses.batch_triplet import (
    BatchAllTripletLoss,
    BatchHardSoftMarginTripletLoss,
    BatchHardTripletLoss,
    BatchHardTripletLossDistanceFunction,
    BatchSemiHardTripletLoss,
)
from sbert.losses.cached_mnrl import CachedMultipleNegativesRankingLoss
from sbert.losses.contrastive import ContrastiveLoss, OnlineContrastiveLoss, SiameseDistanceMetric
from sbert.losses.contrastive_tension import (
    ContrastiveTensionDataLoader,
    ContrastiveTensionLoss,
    ContrastiveTensionLossInBatchNegatives,
)
from sbert.losses.cosent import CoSENTLoss
from sbert.losses.cosine import CosineSimilarityLoss
from sbert.losses.denoising import DenoisingAutoEncoderLoss
from sbert.losses.embed_distill import EmbedDistillLoss, MSELoss
from sbert.losses.gist import CachedGISTEmbedLoss, GISTEmbedLoss
from sbert.losses.infomax import InfomaxLoss
from sbert.losses.margin_distill import DistillKLDivLoss, MarginMSELoss
from sbert.losses.matryoshka import MatryoshkaLoss
from sbert.losses.mnrl import MultipleNegativesRankingLoss
from sbert.losses.mnrl_symmetric import (
    CachedMultipleNegativesSymmetricRankingLoss,
    MultipleNegativesSymmetricRankingLoss,
)
from sbert.losses.multivector import (
    CachedMultiVectorContrastiveLoss,
    MultiVectorContrastiveLoss,
    MultiVectorDistillLoss,
)
from sbert.losses.regularizers import GlobalOrthogonalRegularizationLoss, MegaBatchMarginLoss
from sbert.losses.softmax import SoftmaxLoss
from sbert.losses.sparse_parts import FlopsLoss, SparseMultipleNegativesRankingLoss
from sbert.losses.splade import SpladeLoss
from sbert.losses.triplet import TripletDistanceMetric, TripletLoss

# Keyed by sbert.names.OBJECTIVES, in its order (the CLI's help reads those without torch).
LOSSES: dict[str, type[Loss]] = {
    "classification": SoftmaxLoss,
    "regression": CosineSimilarityLoss,
    "triplet": TripletLoss,
    "mnrl": MultipleNegativesRankingLoss,
    "cached-mnrl": CachedMultipleNegativesRankingLoss,
    "cosent": CoSENTLoss,
    "infomax": InfomaxLoss,
    "splade": SpladeLoss,
    "colbert": MultiVectorContrastiveLoss,
    "cached-colbert": CachedMultiVectorContrastiveLoss,
    "colbert-distill": MultiVectorDistillLoss,
}
# The table columns each kind of example needs (data/tables.py decides the kind from the roles).
KIND_ROLES = {
    "pair-score": ("anchor", "positive", "score"),
    "pair-class": ("anchor", "positive", "label"),
    "triplet": ("anchor", "positive", "negative"),
    "pair": ("anchor", "positive"),
    "text": ("anchor",),
    "distill": ("anchor", "positive", "score"),  # the score column holds a list: one per document
}


def _roles_needed(kinds: tuple[str, ...]) -> str:
    """'anchor, positive and score columns or ...', then the --columns syntax that names them."""
    named = [", ".join(KIND_ROLES[k][:-1]) + f" and {KIND_ROLES[k][-1]}" if len(KIND_ROLES[k]) > 1 else "a text"
             for k in kinds]  # fmt: skip
    example = ",".join(f"{role}=COLUMN" for role in KIND_ROLES[kinds[0]])
    return f"{' or '.join(named)} columns; name yours with --columns {example} (or csv[columns=...]:FILE)"


ALIASES = {
    "softmax": "classification",
    "cosine": "regression",
    "multiple-negatives": "mnrl",
    "gradcache": "cached-mnrl",
    "isbert": "infomax",
}


# Where sbert's objective names keep their own defaults and the classes take sentence-transformers' (the paper's
# triplet margin is 1, sentence-transformers' 5): `sbert train`, recipes and `sbert.train` build losses by name.
OWN_DEFAULTS: dict[str, dict[str, Any]] = {"triplet": {"margin": 1.0, "distance": "euclidean"}}


# `sbert train` without --objective: the objective each kind of table trains with (printed, and documented in
# docs/training.md). Pairs and triplets learn from in-batch negatives (MNRL, the negative column as a hard
# one), scored pairs from their order (CoSENT), labelled pairs with the paper's softmax head.
AUTO = "auto"
AUTO_OBJECTIVES = {"pair": "mnrl", "triplet": "mnrl", "pair-score": "cosent", "pair-class": "classification",
                   "text": "infomax"}  # fmt: skip


def check_objective(name: str) -> str:
    """The objective's canonical name (aliases and "auto" accepted), or a one-line error with a suggestion."""
    key = ALIASES.get(name, name)
    if key in LOSSES or key == AUTO:
        return key
    close = difflib.get_close_matches(name, [*LOSSES, *ALIASES], n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise SbertError(f"unknown objective {name!r}; {hint}known: {', '.join(LOSSES)}")


def auto_objective(dataset: Dataset) -> str:
    """The objective `sbert train` picks for `dataset` when none is named (AUTO_OBJECTIVES), or a one-line error."""
    if dataset.kind not in AUTO_OBJECTIVES:
        raise SbertError(f"{dataset.name} holds {dataset.kind} rows: name the objective (--objective colbert-distill "
                         "for a ColBERT model)")  # fmt: skip
    return AUTO_OBJECTIVES[dataset.kind]


def is_token_level(name: str) -> bool:
    """Whether objective `name` trains token vectors (a multi-vector model) rather than sentence vectors."""
    cls = LOSSES.get(ALIASES.get(name, name))
    return cls is not None and cls.token_level


def build_loss(name: str, dim: int, dataset: Dataset, options: dict[str, Any] | None = None) -> Loss:
    """Instantiate objective `name` for sentence vectors of size `dim`, checking the data fits it."""
    key = check_objective(name)
    cls = LOSSES[auto_objective(dataset) if key == AUTO else key]
    if dataset.kind not in cls.kinds:
        if dataset.source:  # a table: say which columns are missing rather than which kind
            raise SbertError(
                f"objective {key!r}: {dataset.name} has {dataset.source}; it needs {_roles_needed(cls.kinds)}"
            )
        raise SbertError(f"objective {key!r} needs {' or '.join(cls.kinds)} data, but {dataset.name} is {dataset.kind}")
    name = next(k for k, v in LOSSES.items() if v is cls)
    options = {**OWN_DEFAULTS.get(name, {}), **(options or {})}
    try:
        if cls is SoftmaxLoss:
            _check_class_labels(dataset)
            return SoftmaxLoss(embedding_dimension=dim, num_labels=len(dataset.label_names),
                               label_names=dataset.label_names, **options)  # fmt: skip
        return cls(**options)
    except TypeError as e:
        raise SbertError(f"objective {key!r}: bad option ({e})") from None


def _check_class_labels(dataset: Dataset) -> None:
    n = len(dataset.label_names)
    bad = [y for y in dataset.labels or [] if not (0 <= y < n and float(y).is_integer())]
    if not n or bad:
        raise SbertError(f"{dataset.name}: class labels must be integers in [0, {n}), found {bad[:3]}")


__all__ = [
    "AUTO",
    "LOSSES",
    "AdaptiveLayerLoss",
    "AnglELoss",
    "BatchAllTripletLoss",
    "BatchHardSoftMarginTripletLoss",
    "BatchHardTripletLoss",
    "BatchHardTripletLossDistanceFunction",
    "BatchSemiHardTripletLoss",
    "CachedGISTEmbedLoss",
    "CachedMultipleNegativesRankingLoss",
    "CachedMultipleNegativesSymmetricRankingLoss",
    "CoSENTLoss",
    "ContrastiveLoss",
    "ContrastiveTensionDataLoader",
    "ContrastiveTensionLoss",
    "ContrastiveTensionLossInBatchNegatives",
    "CosineSimilarityLoss",
    "DenoisingAutoEncoderLoss",
    "DistillKLDivLoss",
    "EmbedDistillLoss",
    "FlopsLoss",
    "GISTEmbedLoss",
    "GlobalOrthogonalRegularizationLoss",
    "Loss",
    "MSELoss",
    "MarginMSELoss",
    "Matryoshka2dLoss",
    "MatryoshkaLoss",
    "MegaBatchMarginLoss",
    "MultipleNegativesRankingLoss",
    "MultipleNegativesSymmetricRankingLoss",
    "OnlineContrastiveLoss",
    "SiameseDistanceMetric",
    "SoftmaxLoss",
    "SparseMultipleNegativesRankingLoss",
    "SpladeLoss",
    "TripletDistanceMetric",
    "TripletLoss",
    "auto_objective",
    "build_loss",
    "check_objective",
    "is_token_level",
]
