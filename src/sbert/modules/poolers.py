"""Named poolers that turn a transformer's token vectors into a sentence vector (a fresh chain's tail).

"Pooler" is the module after the transformer (mean/max/cls pooling, CNN-SBERT's CNN, IS-BERT's
n-gram CNN); "head" is kept for the classifier of the softmax objective.
"""

from __future__ import annotations

from sbert.modules.base import Module
from sbert.modules.cnn import CNNHead
from sbert.modules.ngram_cnn import NGramCNN
from sbert.modules.pooling import POOLING_FUNCTIONS, Pooling

# mean / max / cls: SBERT's poolings; cnn: CNN-SBERT; ngram-cnn: IS-BERT (n-gram CNN, then mean).
POOLERS = (*POOLING_FUNCTIONS, "cnn", "ngram-cnn")


def build_pooler(name: str | list[str], dimension: int) -> list[Module]:
    """The modules that follow a transformer of width `dimension` for pooler `name`."""
    if name == "cnn":
        return [CNNHead(dimension)]
    if name == "ngram-cnn":
        ngram = NGramCNN(dimension)
        return [ngram, Pooling(ngram.output_dimension, "mean")]
    if isinstance(name, str) and name not in POOLING_FUNCTIONS:
        raise ValueError(f"unknown pooling {name!r}; known: {', '.join(POOLERS)}")
    return [Pooling(dimension, name)]
