"""The reference's modules between a word table and its Pooling: CNN, LSTM, WordWeights, and Dropout after it.

sentence-transformers' first sentence encoders put these over WordEmbeddings' token vectors (its
training_stsbenchmark_cnn / _bilstm / _tf-idf_word_embeddings examples); CNN and LSTM run over a Transformer's
tokens as well. Each keeps the reference's arithmetic, config file and weight names, so a folder either
library saves loads in the other with the same vectors.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from torch import nn

from sbert.modules.base import Features, Module, renamed_key

log = logging.getLogger(__name__)


def vocabulary_weights(vocab: list[str], word_weights: dict[str, float], unknown: float) -> list[float]:
    """Each word's weight: its own, else its lower-cased form's, else `unknown` (one log line counts those)."""
    missing = sum(1 for w in vocab if w not in word_weights and w.lower() not in word_weights)
    log.info("%d of %d words without a weight: %s each", missing, len(vocab), unknown)
    return [word_weights.get(w, word_weights.get(w.lower(), unknown)) for w in vocab]


class CNN(Module):
    """Convolutions of several widths over the token vectors, concatenated per token (padding zeroed first)."""

    module_type = "sentence_transformers.models.CNN"
    config_file = "cnn_config.json"

    def __init__(
        self, in_embedding_dimension: int = 0, out_channels: int = 256,
        kernel_sizes: list[int] = [1, 3, 5],  # noqa: B006 (the reference's default; copied, never changed)
        stride_sizes: list[int] | None = None, *, in_word_embedding_dimension: int | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.in_embedding_dimension = in_word_embedding_dimension or in_embedding_dimension
        if self.in_embedding_dimension <= 0:
            raise ValueError("CNN: in_embedding_dimension (the token vectors' width) is required")
        self.out_channels = out_channels
        self.kernel_sizes = list(kernel_sizes)
        self.stride_sizes = list(stride_sizes) if stride_sizes is not None else [1] * len(self.kernel_sizes)
        # An odd kernel keeps every token ((k - 1) / 2 on each side), as the reference pads.
        self.convs = nn.ModuleList(
            nn.Conv1d(self.in_embedding_dimension, out_channels, kernel, stride=stride, padding=(kernel - 1) // 2)
            for kernel, stride in zip(self.kernel_sizes, self.stride_sizes, strict=True)
        )

    @property
    def input_dimension(self) -> int:
        """The token vectors' width it takes."""
        return self.in_embedding_dimension

    @property
    def embedding_dimension(self) -> int:
        """The width of the token vectors it gives: the channels of every kernel."""
        return self.out_channels * len(self.kernel_sizes)

    def get_embedding_dimension(self) -> int:
        """The width of the token vectors it gives (the reference's name)."""
        return self.embedding_dimension

    def forward(self, features: Features) -> Features:
        """Replace `token_embeddings` (B, T, d) by the convolutions' (B, T, channels x kernels)."""
        tokens = features["token_embeddings"]
        if "attention_mask" in features:
            tokens = tokens.masked_fill(features["attention_mask"].unsqueeze(-1) == 0, 0)
        channels_first = tokens.transpose(1, -1)
        features["token_embeddings"] = torch.cat([conv(channels_first) for conv in self.convs], 1).transpose(1, -1)
        return features

    def get_config(self) -> dict[str, Any]:
        """The reference's config keys."""
        return {"in_embedding_dimension": self.in_embedding_dimension, "out_channels": self.out_channels,
                "kernel_sizes": self.kernel_sizes, "stride_sizes": self.stride_sizes}  # fmt: skip

    @classmethod
    def read_config(cls, path: Path) -> dict[str, Any]:
        """The config, its older key renamed."""
        return renamed_key(super().read_config(path), "in_word_embedding_dimension", "in_embedding_dimension")


class LSTM(Module):
    """A (bidirectional) LSTM over each row's real tokens: `token_embeddings` of hidden_dim (x2) per token."""

    module_type = "sentence_transformers.models.LSTM"
    config_file = "lstm_config.json"

    def __init__(self, embedding_dimension: int = 0, hidden_dim: int = 0, num_layers: int = 1, dropout: float = 0,
                 bidirectional: bool = True, *, word_embedding_dimension: int | None = None) -> None:  # fmt: skip
        super().__init__()
        self.in_dimension = word_embedding_dimension or embedding_dimension
        if self.in_dimension <= 0 or hidden_dim <= 0:
            raise ValueError("LSTM: embedding_dimension (the token vectors' width) and hidden_dim are required")
        self.hidden_dim, self.num_layers, self.dropout, self.bidirectional = (
            hidden_dim,
            num_layers,
            dropout,
            bidirectional,
        )
        self.encoder = nn.LSTM(self.in_dimension, hidden_dim, num_layers=num_layers, dropout=dropout,
                               bidirectional=bidirectional, batch_first=True)  # fmt: skip

    @property
    def input_dimension(self) -> int:
        """The token vectors' width it takes."""
        return self.in_dimension

    @property
    def embedding_dimension(self) -> int:
        """The width of the token vectors it gives."""
        return self.hidden_dim * (2 if self.bidirectional else 1)

    def get_embedding_dimension(self) -> int:
        """The width of the token vectors it gives (the reference's name)."""
        return self.embedding_dimension

    def forward(self, features: Features) -> Features:
        """Replace `token_embeddings` by the LSTM's outputs; padding positions come out zero."""
        tokens = features["token_embeddings"]
        lengths = features.get("sentence_lengths")
        if lengths is None:  # after a Transformer: its rows' lengths are in the mask
            lengths = features["attention_mask"].sum(dim=1)
        packed = nn.utils.rnn.pack_padded_sequence(tokens, torch.clamp(lengths, min=1).cpu(), batch_first=True,
                                                   enforce_sorted=False)  # fmt: skip
        out, _ = self.encoder(packed)
        features["token_embeddings"] = nn.utils.rnn.pad_packed_sequence(out, batch_first=True,
                                                                        total_length=tokens.shape[1])[0]  # fmt: skip
        return features

    def get_config(self) -> dict[str, Any]:
        """The reference's config keys."""
        return {"embedding_dimension": self.in_dimension, "hidden_dim": self.hidden_dim, "num_layers": self.num_layers,
                "dropout": self.dropout, "bidirectional": self.bidirectional}  # fmt: skip

    @classmethod
    def read_config(cls, path: Path) -> dict[str, Any]:
        """The config, its older key renamed."""
        return renamed_key(super().read_config(path), "word_embedding_dimension", "embedding_dimension")


class WordWeights(Module):
    """Each token vector times its word's weight (IDF, say); the Pooling's mean then divides by the weights' sum."""

    module_type = "sentence_transformers.models.WordWeights"

    def __init__(self, vocab: list[str], word_weights: dict[str, float], unknown_word_weight: float = 1) -> None:
        super().__init__()
        self.vocab, self.word_weights, self.unknown_word_weight = list(vocab), dict(word_weights), unknown_word_weight
        weights = vocabulary_weights(self.vocab, word_weights, unknown_word_weight)
        self.emb_layer = nn.Embedding(len(self.vocab), 1)
        with torch.no_grad():
            self.emb_layer.weight.copy_(torch.tensor(weights, dtype=torch.float32).unsqueeze(1))

    def forward(self, features: Features) -> Features:
        """Weighted `token_embeddings`, and `token_weights_sum` (B,) for the Pooling's mean."""
        weights = self.emb_layer(features["input_ids"]).squeeze(-1) * features["attention_mask"].float()
        features["token_embeddings"] = features["token_embeddings"] * weights.unsqueeze(-1)
        features["token_weights_sum"] = weights.sum(dim=1)
        return features

    def get_config(self) -> dict[str, Any]:
        """The reference's config keys."""
        return {"vocab": self.vocab, "word_weights": self.word_weights, "unknown_word_weight": self.unknown_word_weight}


class Dropout(Module):
    """Dropout on the sentence vector while training; nothing at inference."""

    module_type = "sentence_transformers.models.Dropout"

    def __init__(self, dropout: float = 0.2) -> None:
        super().__init__()
        self.dropout = dropout
        self.dropout_layer = nn.Dropout(dropout)

    def forward(self, features: Features) -> Features:
        """`sentence_embedding` through the dropout."""
        features["sentence_embedding"] = self.dropout_layer(features["sentence_embedding"])
        return features

    def get_config(self) -> dict[str, Any]:
        """The reference's config key."""
        return {"dropout": self.dropout}
