"""A cross-encoder as sbert's training engine trains it: one column of (a, b) pairs, the logits as the vector.

The engine batches, pads and steps a SentenceEncoder chain. A cross-encoder fits that contract as a
chain of its one PairClassifier whose single text column holds pairs: `column_tokens` joins each
pair as the tokenizer does (the longer side cut first), `column_pad` sets the second text's token
types (an LLM reranker renders its chat template instead), and the scorer's forward puts the logits where
a sentence vector would be. The losses of
losses/pair_logits.py read them. Saving writes the cross-encoder's own layout; the weights are
shared, so training this chain trains the CrossEncoder it came from.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sbert.dense.model import SentenceEncoder
from sbert.modules.classifier import PairClassifier
from sbert.modules.logit_score import LogitPairScorer

Pair = tuple[str, str]


class PairChain(SentenceEncoder):
    """The CrossEncoder's classifier as a one-module chain over pairs (what `CrossEncoder.training_chain` gives)."""

    def __init__(self, cross: Any) -> None:  # a reranker.model.CrossEncoder (it imports this module)
        super().__init__([cross.classifier], device=cross.device)
        self.__dict__["_cross"] = cross  # not a submodule: the classifier is registered once, as this chain's
        self.settings, self.source_dir = cross.settings, cross.source_dir

    @property
    def classifier(self) -> PairClassifier | LogitPairScorer:
        """The pair scorer, the chain's one module: a sequence classifier, or an LLM's yes-minus-no logit."""
        first = self[0]
        assert isinstance(first, PairClassifier | LogitPairScorer)
        return first

    def column_tokens(self, column: int) -> Callable[[Sequence[Pair]], tuple[list[list[int]], list[int]]]:  # type: ignore[override]
        """Each pair joined into one row of token ids, and the indices of the pairs cut to max_seq_length."""

        def joined(pairs: Sequence[Pair]) -> tuple[list[list[int]], list[int]]:
            rows = [(str(a), str(b)) for a, b in pairs]
            return self.classifier.pair_ids(rows), self.classifier.over_limit(rows)

        return joined

    def save(self, path: str | os.PathLike[str], extras: Callable[[Path], None] | None = None,
             merge_adapter: bool = False) -> None:  # fmt: skip
        """The cross-encoder's layout (sentence-transformers' CrossEncoder), with `extras` inside the same write."""
        self.__dict__["_cross"].save(path, extras=extras)
