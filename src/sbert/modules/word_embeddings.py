"""WordEmbeddings: a word vector table (GloVe, word2vec, fastText text files) that starts a chain.

sentence-transformers' first sentence encoders, and the SBERT paper's "Avg. GloVe embeddings" baseline, are a
word table and a mean Pooling: `WordEmbeddings.from_text_file("glove.6B.300d.txt.gz")` then Pooling (and
optionally WordWeights, a CNN or an LSTM between them, word_heads.py). Texts become vocabulary indices through
the WhitespaceTokenizer (word_tokenizer.py), cut at `max_seq_length`; the padded batch carries each row's
length (`sentence_lengths`, which the LSTM packs by). The saved layout is the reference's:
`wordembedding_config.json`, `whitespacetokenizer_config.json` and `model.safetensors` (`emb_layer.weight`).
"""

from __future__ import annotations

import gzip
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np
import torch
from torch import nn

from sbert.errors import ModelFormatError, SbertError
from sbert.modules.base import Features, Module, load_weights, right_padded
from sbert.modules.word_tokenizer import TOKENIZER_CLASS, WhitespaceTokenizer

log = logging.getLogger(__name__)

PADDING_TOKEN = "PADDING_TOKEN"  # index 0 of a table read from a text file: the zero vector padding points at
DEFAULT_MAX_SEQ_LENGTH = 1_000_000


class WordEmbeddings(Module):
    """Token vectors from a word table: `token_embeddings` (B, T, d) for a Pooling (or a CNN, LSTM) after it."""

    module_type = "sentence_transformers.models.WordEmbeddings"
    config_file = "wordembedding_config.json"

    def __init__(self, tokenizer: WhitespaceTokenizer, embedding_weights: Any, update_embeddings: bool = False,
                 max_seq_length: int = DEFAULT_MAX_SEQ_LENGTH) -> None:  # fmt: skip
        super().__init__()
        if not isinstance(tokenizer, WhitespaceTokenizer):
            raise SbertError(f"WordEmbeddings takes a WhitespaceTokenizer, not {type(tokenizer).__name__}")
        weights = torch.as_tensor(np.asarray(embedding_weights) if isinstance(embedding_weights, list) else
                                  embedding_weights)  # fmt: skip
        if weights.ndim != 2:
            raise SbertError(f"WordEmbeddings: the table must be 2-D (words x width), got shape {tuple(weights.shape)}")
        self.emb_layer = nn.Embedding(weights.shape[0], weights.shape[1])
        with torch.no_grad():
            self.emb_layer.weight.copy_(weights)
        self.emb_layer.weight.requires_grad = update_embeddings
        self.tokenizer = tokenizer
        self.update_embeddings = update_embeddings
        self.max_seq_length = max_seq_length

    @property
    def embedding_dimension(self) -> int:
        """Width of the token vectors."""
        return int(self.emb_layer.embedding_dim)

    def get_embedding_dimension(self) -> int:
        """Width of the token vectors (the reference's name)."""
        return self.embedding_dimension

    get_word_embedding_dimension = get_embedding_dimension  # the reference's older name

    def fast_tokenizer(self, max_length: int) -> None:
        """No Rust tokenizer: words are looked up in Python."""
        return None

    def token_ids(self, texts: Sequence[str]) -> tuple[list[list[int]], list[int]]:
        """Vocabulary indices per text, cut at max_seq_length, and the indices of the texts that were cut."""
        full = [self.tokenizer.tokenize(text) for text in texts]
        cut = [i for i, row in enumerate(full) if len(row) > self.max_seq_length]
        return [row[: self.max_seq_length] for row in full], cut

    def pad(self, rows: Sequence[Sequence[int]]) -> Features:
        """Right-padded indices (padding 0), the mask and each row's length; at least one column, as the reference."""
        features = right_padded(rows, min_width=1)
        features["sentence_lengths"] = torch.tensor([len(row) for row in rows], dtype=torch.long)
        return features

    def tokenize(self, texts: Sequence[str]) -> Features:
        """Padded indices, mask and lengths for `forward`."""
        return self.pad(self.token_ids(texts)[0])

    def forward(self, features: Features) -> Features:
        """Add `token_embeddings` (B, T, d)."""
        features["token_embeddings"] = self.emb_layer(features["input_ids"])
        return features

    def get_config(self) -> dict[str, Any]:
        """The reference's config keys."""
        return {"tokenizer_class": TOKENIZER_CLASS, "update_embeddings": self.update_embeddings,
                "max_seq_length": self.max_seq_length}  # fmt: skip

    def save(self, path: Path) -> None:
        """The config, the table (`emb_layer.weight`) and the tokenizer's vocabulary."""
        super().save(Path(path))
        self.tokenizer.save(path)

    @classmethod
    def load(cls, path: Path) -> Self:
        """Read the reference's files (a WhitespaceTokenizer's; its other tokenizers are refused by name)."""
        path = Path(path)
        config = cls.read_config(path)
        kind = str(config.get("tokenizer_class", ""))
        if not kind.endswith("WhitespaceTokenizer"):
            raise ModelFormatError(f"{path / cls.config_file}: tokenizer_class {kind!r} is not supported "
                                   "(sbert reads WhitespaceTokenizer vocabularies)")  # fmt: skip
        weights = load_weights(path)
        if "emb_layer.weight" not in weights:
            raise ModelFormatError(f"{path}: no 'emb_layer.weight' tensor")
        return cls(WhitespaceTokenizer.load(path), weights["emb_layer.weight"], bool(config.get("update_embeddings")),
                   int(config.get("max_seq_length", DEFAULT_MAX_SEQ_LENGTH)))  # fmt: skip

    @classmethod
    def from_text_file(
        cls, embeddings_file_path: str, update_embeddings: bool = False, item_separator: str = " ",
        tokenizer: WhitespaceTokenizer | None = None, max_vocab_size: int | None = None,
    ) -> Self:  # fmt: skip
        """A table read from a word vector text file (`word v1 ... vd` a line; .gz too; word2vec's header skipped).

        Index 0 is a zero PADDING_TOKEN; a line of another width than the first is skipped with a warning;
        reading stops once the vocabulary (padding included) is over `max_vocab_size`. Files are read from
        disk only (nothing is downloaded).
        """
        words, vectors = [PADDING_TOKEN], [np.zeros(0)]
        for word, vector in _word_vectors(Path(embeddings_file_path), item_separator):
            if len(words) == 1:
                vectors[0] = np.zeros(len(vector))
            elif len(vector) != len(vectors[0]):
                log.warning("%s: %r has %d numbers, not %d: skipped", embeddings_file_path, word, len(vector),
                            len(vectors[0]))  # fmt: skip
                continue
            words.append(word)
            vectors.append(vector)
            if max_vocab_size is not None and 0 < max_vocab_size < len(words):
                break
        if len(words) == 1:
            raise SbertError(f"{embeddings_file_path}: no word vectors in it")
        tokenizer = tokenizer if tokenizer is not None else WhitespaceTokenizer()
        tokenizer.set_vocab(words)
        return cls(tokenizer, np.asarray(vectors), update_embeddings)


def _word_vectors(path: Path, separator: str) -> Iterator[tuple[str, np.ndarray]]:
    """(word, float64 vector) per line of a word vector text file, its word2vec header line skipped."""
    if not path.is_file():
        raise SbertError(f"{path}: no such word vector file (sbert reads word vectors from disk only)")
    with gzip.open(path, "rt", encoding="utf8") if path.suffix == ".gz" else path.open(encoding="utf8") as lines:
        for number, line in enumerate(lines, 1):
            fields = line.rstrip().split(separator)
            if number == 1 and len(fields) == 2:  # word2vec: "<words> <width>"
                continue
            try:
                yield fields[0], np.asarray(fields[1:], dtype=np.float64)
            except ValueError:
                raise SbertError(f"{path}:{number}: not a word followed by numbers") from None
