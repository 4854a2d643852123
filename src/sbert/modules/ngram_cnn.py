"""IS-BERT's local n-gram encoder: parallel 1-D convolutions over the token embeddings.

Zhang et al. 2020, "An Unsupervised Sentence Embedding Method by Mutual Information
Maximization" (IS-BERT). Token vectors h_1..h_l from the transformer go through one
convolution per window size (1, 3, 5 by default; the paper uses 3, 5, 7 for long argument
sentences), `filters` output channels each, ReLU, 'same' padding so every token keeps a vector.
The outputs are concatenated per token into the local n-gram representations F(x), which
replace `token_embeddings`; a mean Pooling after this module gives the sentence vector E(x).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.modules.base import Features, Module


def ngram_features(tokens: Tensor, mask: Tensor, convs: nn.ModuleList) -> Tensor:
    """Concatenated ReLU(conv_k(tokens)) per token, zero at padding."""
    # tokens: (B, T, H) -> channels first (B, H, T) for conv1d
    x = (tokens * mask.unsqueeze(-1).to(tokens.dtype)).transpose(1, 2)  # padding must not leak into windows
    outs = [functional.relu(conv(x)) for conv in convs]  # each (B, filters, T)
    local = torch.cat(outs, dim=1).transpose(1, 2)  # (B, T, filters * len(windows))
    return local * mask.unsqueeze(-1).to(local.dtype)


class NGramCNN(Module):
    """Replaces `token_embeddings` (B, T, H) by local n-gram vectors (B, T, filters * len(windows))."""

    module_type = "sbert.modules.ngram_cnn.NGramCNN"

    def __init__(self, in_dimension: int, windows: list[int] | tuple[int, ...] = (1, 3, 5), filters: int = 256) -> None:
        super().__init__()
        windows = [int(w) for w in windows]
        if not windows or any(w < 1 or w % 2 == 0 for w in windows) or filters < 1:
            # Odd windows keep the output aligned with the tokens under symmetric padding.
            raise ValueError(f"NGramCNN needs odd window sizes >= 1 and filters >= 1, got {windows}, {filters}")
        self.in_dimension, self.windows, self.filters = in_dimension, windows, filters
        self.convs = nn.ModuleList(nn.Conv1d(in_dimension, filters, w, padding=w // 2) for w in windows)

    @property
    def output_dimension(self) -> int:
        """Size of each local vector (and of the mean-pooled sentence vector)."""
        return self.filters * len(self.windows)

    def forward(self, features: Features) -> Features:
        """Overwrite `token_embeddings` with the local n-gram vectors."""
        features["token_embeddings"] = ngram_features(
            features["token_embeddings"], features["attention_mask"], self.convs
        )
        return features

    def get_config(self) -> dict[str, Any]:
        """Input width, window sizes and filters per window."""
        return {"in_dimension": self.in_dimension, "windows": self.windows, "filters": self.filters}
