"""CoSENT loss (Su 2022), a ranking loss on pair cosines.

    loss = log(1 + sum_{(i,j),(k,l): y_ij > y_kl} exp(scale * (cos_kl - cos_ij)))

Every pair in the batch whose gold score is higher than another's should have the higher
cosine (or the pairwise `similarity_fct` given). scale = 20 as in sentence-transformers.
Inputs: pair-score datasets.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.losses.base import Loss
from sbert.losses.gather import gather_rows
from sbert.losses.options import Similarity
from sbert.vectors.scores import pairwise_cos_sim


def cosent(cosines: Tensor, labels: Tensor, scale: float) -> Tensor:
    """The CoSENT value for cosines (B,) and gold scores (B,)."""
    diff = scale * (cosines[None, :] - cosines[:, None])  # diff[i, j] = s * (cos_j - cos_i)
    wrong_order = labels[:, None] > labels[None, :]  # pairs where i should outrank j
    diff = diff.masked_fill(~wrong_order, float("-inf"))
    # The leading zero is the "1 +" inside the log.
    flat = torch.cat([torch.zeros(1, device=diff.device, dtype=diff.dtype), diff.flatten()])
    return torch.logsumexp(flat, dim=0)


class CoSENTLoss(Loss):
    """Rank pairs by cosine in the order of their gold scores (`CoSENTLoss(model, scale=20.0)`; model optional)."""

    kinds = ("pair-score",)

    def __init__(
        self, model: nn.Module | None = None, scale: float = 20.0, similarity_fct: Similarity = pairwise_cos_sim
    ) -> None:
        super().__init__()
        self.name_model(model)
        self.scale = scale
        self.similarity_fct = similarity_fct

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """CoSENT over all ordered pairs of the batch."""
        assert labels is not None
        if self.similarity_fct is pairwise_cos_sim:  # in the autocast dtype
            cosines = functional.cosine_similarity(embeddings[0], embeddings[1], dim=-1)
        else:
            cosines = self.similarity_fct(embeddings[0], embeddings[1])
        # Under torchrun, every pair of the global batch against every other (losses/gather.py).
        cosines, _ = gather_rows(cosines, self.gather_across_ranks, vectors=True)
        labels, _ = gather_rows(labels.to(cosines.dtype), self.gather_across_ranks, vectors=True)
        return cosent(cosines, labels, self.scale)
