"""BoW: a sentence vector as wide as a vocabulary, each known word's weight at its index (tf-idf, with IDF weights).

The reference's bag-of-words encoder, a chain of its own (no Pooling after it): words are found by the
WhitespaceTokenizer with no stop words and no lower-casing, and a word's weight comes from `word_weights` (its
own form, else its lower-cased form, else `unknown_word_weight`). With `cumulative_term_frequency` a word
counts each time it occurs, else once. Saved as the reference saves it: its config alone, no weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from sbert.modules.base import Features, Module, right_padded
from sbert.modules.static_embedding import NO_LIMIT
from sbert.modules.word_heads import vocabulary_weights
from sbert.modules.word_tokenizer import WhitespaceTokenizer


class BoW(Module):
    """Texts to (B, vocabulary) weighted word counts: `sentence_embedding` straight from the token ids."""

    module_type = "sentence_transformers.models.BoW"

    def __init__(
        self, vocab: list[str],
        word_weights: dict[str, float] = {},  # noqa: B006 (the reference's default; copied, never changed)
        unknown_word_weight: float = 1, cumulative_term_frequency: bool = True,
    ) -> None:  # fmt: skip
        super().__init__()
        self.vocab = list(dict.fromkeys(vocab))  # one index a word
        self.word_weights = dict(word_weights)
        self.unknown_word_weight, self.cumulative_term_frequency = unknown_word_weight, cumulative_term_frequency
        weights = vocabulary_weights(self.vocab, self.word_weights, unknown_word_weight)
        self.register_buffer("weights", torch.tensor(weights, dtype=torch.float32), persistent=False)
        self.tokenizer = WhitespaceTokenizer(self.vocab, stop_words=(), do_lower_case=False)

    @property
    def embedding_dimension(self) -> int:
        """The vector's width: the vocabulary's size."""
        return len(self.vocab)

    def get_embedding_dimension(self) -> int:
        """The vector's width (the reference's name)."""
        return self.embedding_dimension

    @property
    def max_seq_length(self) -> int:
        """No limit: every word of a long text counts."""
        return NO_LIMIT

    def fast_tokenizer(self, max_length: int) -> None:
        """No Rust tokenizer: words are looked up in Python."""
        return None

    def token_ids(self, texts: Sequence[str]) -> tuple[list[list[int]], list[int]]:
        """Vocabulary indices per text (never cut)."""
        return [self.tokenizer.tokenize(text) for text in texts], []

    def pad(self, rows: Sequence[Sequence[int]]) -> Features:
        """Right-padded indices and their mask."""
        return right_padded(rows)

    def tokenize(self, texts: Sequence[str]) -> Features:
        """Padded indices and mask for `forward`."""
        return self.pad(self.token_ids(texts)[0])

    def forward(self, features: Features) -> Features:
        """Add `sentence_embedding` (B, vocabulary): each word's weight, summed over its occurrences or once."""
        ids, mask = features["input_ids"], features["attention_mask"].to(torch.float32)
        held = self.weights
        assert isinstance(held, torch.Tensor)  # a buffer
        weights = held.to(torch.float32)  # float32 whatever precision the chain was cast to
        vectors = torch.zeros((ids.shape[0], len(self.vocab)), dtype=torch.float32, device=ids.device)
        if self.cumulative_term_frequency:  # added once an occurrence, as the reference adds (padding adds 0)
            vectors.scatter_add_(1, ids, weights[ids] * mask)
        else:  # the weight once for a word that occurs at all
            vectors.scatter_add_(1, ids, mask)
            vectors = torch.where(vectors > 0, weights.expand_as(vectors), vectors)
        features["sentence_embedding"] = vectors
        return features

    def get_config(self) -> dict[str, Any]:
        """The reference's config keys."""
        return {"vocab": self.vocab, "word_weights": self.word_weights, "unknown_word_weight": self.unknown_word_weight,
                "cumulative_term_frequency": self.cumulative_term_frequency}  # fmt: skip
