"""CNN-SBERT's pooling head, used in place of mean pooling.

Choi et al. 2020, "Evaluation of BERT and ALBERT Sentence Embedding Performance on Downstream
NLP Tasks", Fig. 2.

The token embeddings are a one-channel map (B, 1, T, H). Five convolutions run down the token
axis only (kernels (k, 1): each hidden unit is filtered on its own, with weights shared across
units): 1x1 -> 32, 3x1 -> 128, 3x1 -> 128, 5x1 -> 64, each followed by tanh and max pooling,
then 1x1 -> 1 and tanh; the map (B, T, H) is averaged over real tokens into (B, H).

Choices where the paper is silent:
- Convolutions pad (k // 2, 0), so every layer keeps T tokens.
- Max pooling is a 3x1 window with stride 1 and padding 1 over tokens: it keeps T, so a
  three-token sentence never collapses to nothing and the mask stays aligned at every layer.
- Padding is masked at every layer: zeroed before each convolution (no leaking into a real
  token's window) and set to -inf before each max pooling; the final average covers real tokens only.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from sbert.modules.base import Features, Module
from sbert.modules.pooling import mean_pool

# (kernel height over tokens, output channels) of each tanh + max-pool stage, then the 1x1 -> 1 layer.
STAGES = ((1, 32), (3, 128), (3, 128), (5, 64))
_POOL = 3


def masked_max_pool(x: Tensor, mask4: Tensor) -> Tensor:
    """3x1 max pooling over tokens (stride 1) that never picks a padding position."""
    # x: (B, C, T, H); mask4: (B, 1, T, 1) bool
    filled = x.masked_fill(~mask4, float("-inf"))
    pooled = nn.functional.max_pool2d(filled, (_POOL, 1), stride=1, padding=(_POOL // 2, 0))
    return pooled.masked_fill(~mask4, 0.0)  # padding rows are -inf after pooling; back to 0


def cnn_head(tokens: Tensor, mask: Tensor, convs: nn.ModuleList, last: nn.Conv2d) -> Tensor:
    """The Fig. 2 stack: (B, T, H) token vectors -> (B, H) sentence vector."""
    mask4 = mask.bool()[:, None, :, None]  # (B, 1, T, 1)
    x = tokens.unsqueeze(1).masked_fill(~mask4, 0.0)  # (B, 1, T, H)
    for conv in convs:
        x = masked_max_pool(torch.tanh(conv(x)), mask4)  # (B, C, T, H)
    x = torch.tanh(last(x)).squeeze(1)  # (B, T, H)
    return mean_pool(x, mask)


class CNNHead(Module):
    """Pools `token_embeddings` into `sentence_embedding` (B, H) with the CNN-SBERT stack."""

    module_type = "sbert.modules.cnn.CNNHead"

    def __init__(self, embedding_dimension: int) -> None:
        super().__init__()
        self.embedding_dimension = embedding_dimension
        convs, channels = [], 1
        for height, out in STAGES:
            convs.append(nn.Conv2d(channels, out, (height, 1), padding=(height // 2, 0)))
            channels = out
        self.convs = nn.ModuleList(convs)
        self.last = nn.Conv2d(channels, 1, (1, 1))

    @property
    def output_dimension(self) -> int:
        """The head keeps the transformer's width."""
        return self.embedding_dimension

    def forward(self, features: Features) -> Features:
        """Add `sentence_embedding` (B, H)."""
        tokens, mask = features["token_embeddings"], features["attention_mask"]
        features["sentence_embedding"] = cnn_head(tokens, mask, self.convs, self.last)
        return features

    def get_config(self) -> dict[str, Any]:
        """The transformer width the head was built for."""
        return {"embedding_dimension": self.embedding_dimension}
