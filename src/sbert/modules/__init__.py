"""The modules a SentenceEncoder chains, registered by the class name modules.json records."""

from __future__ import annotations

from sbert.errors import ModelFormatError
from sbert.modules.base import Features, Module
from sbert.modules.cnn import CNNHead
from sbert.modules.ngram_cnn import NGramCNN
from sbert.modules.normalize import Normalize
from sbert.modules.poolers import POOLERS, build_pooler
from sbert.modules.pooling import Pooling
from sbert.modules.transformer import Transformer

# Keyed by class name: modules.json may say `sentence_transformers.models.Pooling`,
# `sentence_transformers.sentence_transformer.modules.pooling.Pooling` (6.x) or `sbert...Pooling`.
MODULES: dict[str, type[Module]] = {
    "Transformer": Transformer,
    "Pooling": Pooling,
    "Normalize": Normalize,
    "CNNHead": CNNHead,
    "NGramCNN": NGramCNN,
}


def module_class(type_name: str) -> type[Module]:
    """Find the class for a modules.json `type`, or fail naming the known ones."""
    cls = MODULES.get(type_name.rsplit(".", 1)[-1])
    if cls is None:
        raise ModelFormatError(f"unsupported module type {type_name!r}; known: {', '.join(MODULES)}")
    return cls


__all__ = [
    "MODULES",
    "POOLERS",
    "CNNHead",
    "Features",
    "Module",
    "NGramCNN",
    "Normalize",
    "Pooling",
    "Transformer",
    "build_pooler",
    "module_class",
]
