"""StaticEmbedding: one trainable vector per vocabulary token, averaged per sentence (a chain may start with it).

The layout is sentence-transformers' StaticEmbedding module: `tokenizer.json` and `model.safetensors`
holding `embedding.weight` (V, d); model2vec's keys (`embeddings`, optional `mapping` and per-token
`weights`) load too, folded into one row per token id as model2vec averages them. No config file:
sentence-transformers writes none. `sbert.StaticEncoder` runs the same files without torch; this
module is what lets such a table sit in a SentenceEncoder chain (before Normalize, Dense, or inside a
Router route) and train.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import torch
from torch import nn

from sbert.errors import ModelFormatError
from sbert.modules.base import Features, Module, load_weights, right_padded
from sbert.vectors.tokens import cut_by_limit, fast_ids, saved_limit

TOKENIZER_FILE = "tokenizer.json"
# A static table has no position limit: no input is ever cut (what max_seq_length reports).
NO_LIMIT = 2**31 - 1


class StaticEmbedding(Module):
    """Mean of per-token vectors over the tokens of each input (special tokens left out).

    Nothing is truncated unless tokenizer.json saves a truncation, which is honoured as sentence-transformers does.
    """

    module_type = "sentence_transformers.models.StaticEmbedding"

    def __init__(
        self, tokenizer: Any, embedding_weights: torch.Tensor | None = None, embedding_dim: int | None = None
    ) -> None:
        super().__init__()
        tokenizer.no_padding()
        self.tokenizer = tokenizer
        if embedding_weights is not None:
            if embedding_weights.ndim != 2 or embedding_weights.shape[0] != tokenizer.get_vocab_size():
                raise ModelFormatError(
                    f"static table of shape {tuple(embedding_weights.shape)} does not match a vocabulary of "
                    f"{tokenizer.get_vocab_size()}"
                )
            self.embedding = nn.EmbeddingBag.from_pretrained(embedding_weights.float(), freeze=False, mode="mean")
        elif embedding_dim is not None:
            self.embedding = nn.EmbeddingBag(tokenizer.get_vocab_size(), embedding_dim, mode="mean")
        else:
            raise ValueError("StaticEmbedding needs embedding_weights or an embedding_dim")

    @property
    def embedding_dimension(self) -> int:
        """Width of the sentence vector."""
        return int(self.embedding.embedding_dim)

    @property
    def max_seq_length(self) -> int:
        """The truncation tokenizer.json saves, else no limit: every token of a long text counts."""
        return saved_limit(self.tokenizer) or NO_LIMIT

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        raise ValueError("a StaticEmbedding has no token limit to set")

    def fast_tokenizer(self, max_length: int) -> Any:
        """The Rust tokenizer as this module tokenizes: no padding, its saved truncation (`max_length` is not read)."""
        return self.tokenizer

    def token_ids(self, texts: Sequence[str]) -> tuple[list[list[int]], list[int]]:
        """Token ids without special tokens, and the indices the saved truncation (if any) cut."""
        rows = fast_ids(self.tokenizer, list(texts), add_special_tokens=False) if texts else []
        return rows, cut_by_limit(self.tokenizer, texts, rows, add_special_tokens=False)

    def pad(self, rows: Sequence[Sequence[int]]) -> Features:
        """Right-padded ids and mask (an empty input keeps an all-zero mask: a zero vector, as in EmbeddingBag)."""
        return right_padded(rows)

    def tokenize(self, texts: Sequence[str]) -> Features:
        """Padded ids and mask for `forward`."""
        return self.pad(self.token_ids(texts)[0])

    def forward(self, features: Features) -> Features:
        """Add `sentence_embedding` (B, d): the mean table row over each input's real tokens."""
        mask = features["attention_mask"].bool()  # (B, T)
        flat = features["input_ids"][mask]  # (N,) real tokens, row after row
        lengths = mask.sum(dim=1)  # (B,)
        offsets = torch.cumsum(lengths, 0) - lengths  # (B,) where each row's tokens start
        features["sentence_embedding"] = self.embedding(flat, offsets)
        return features

    def save(self, path: Path) -> None:
        """Write tokenizer.json and model.safetensors, as sentence-transformers does (no config file)."""
        from safetensors.torch import save_file

        path.mkdir(parents=True, exist_ok=True)
        table = self.embedding.weight.detach().contiguous().cpu()
        save_file({"embedding.weight": table}, str(path / "model.safetensors"))
        self.tokenizer.save(str(path / TOKENIZER_FILE))

    @classmethod
    def load(cls, path: Path) -> Self:
        """Read sentence-transformers' (or model2vec's) files from `path`."""
        from tokenizers import Tokenizer

        if not (path / TOKENIZER_FILE).is_file():
            raise ModelFormatError(f"{path / TOKENIZER_FILE}: missing (a StaticEmbedding needs its fast tokenizer)")
        weights = load_weights(path)
        return cls(Tokenizer.from_file(str(path / TOKENIZER_FILE)), embedding_weights=static_table(weights, path))


def static_table(weights: dict[str, torch.Tensor], path: Path) -> torch.Tensor:
    """(V, d) rows per token id: `embedding.weight`, or model2vec's embeddings[mapping] * weights[:, None]."""
    if "embedding.weight" in weights:
        return weights["embedding.weight"]
    if "embeddings" not in weights:
        raise ModelFormatError(f"{path}: no 'embedding.weight' (or model2vec 'embeddings') tensor")
    table = weights["embeddings"].float()
    if "mapping" in weights:
        table = table[weights["mapping"].long()]
    if "weights" in weights:
        table = table * weights["weights"].float()[:, None]
    return table.contiguous()
