"""Multiple-negatives ranking loss (Henderson et al. 2017; InfoNCE with in-batch negatives).

    loss = cross-entropy(scale * sim(a_i, c_j), target j = i)

For anchors a_i and candidates c_j = [positives; hard negatives]: every other positive in the
batch (and every hard negative) is a negative for a_i. sim is the cosine unless `similarity_fct`
names another (n, m) function; scale = 20 as in sentence-transformers.
Inputs: (anchor, positive) pairs or (anchor, positive, negative, ...) tuples.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.losses.base import Loss
from sbert.losses.gather import gather_rows
from sbert.losses.options import Similarity, refuse_unsupported
from sbert.vectors.scores import cos_sim

# sentence-transformers 6.2's variants of the objective that sbert does not train (refused unless at these values).
MNRL_ONLY = {"directions": ("query_to_doc",), "partition_mode": "joint", "hardness_mode": None,
             "hardness_strength": 0.0}  # fmt: skip


def cosine_matrix(a: Tensor, b: Tensor) -> Tensor:
    """All-pairs cosine (n, m) for a (n, d) and b (m, d)."""
    return functional.normalize(a, dim=-1) @ functional.normalize(b, dim=-1).T


class MultipleNegativesRankingLoss(Loss):
    """Pick each anchor's own positive among all candidates of the batch.

    `MultipleNegativesRankingLoss(model, scale=20.0, similarity_fct=cos_sim)` as in sentence-transformers;
    `model` may be omitted (`sbert train` builds the loss by name).
    """

    kinds = ("triplet", "pair", "pair-score", "pair-class")
    in_batch_negatives = True

    def __init__(
        self,
        model: nn.Module | None = None,
        scale: float = 20.0,
        similarity_fct: Similarity = cos_sim,
        gather_across_devices: bool = False,
        directions: tuple[str, ...] = ("query_to_doc",),
        partition_mode: str = "joint",
        hardness_mode: str | None = None,
        hardness_strength: float = 0.0,
    ) -> None:
        super().__init__()
        given = {"directions": tuple(directions), "partition_mode": partition_mode, "hardness_mode": hardness_mode,
                 "hardness_strength": hardness_strength}  # fmt: skip
        refuse_unsupported(type(self).__name__, given, MNRL_ONLY)
        self.name_model(model)
        self.scale = scale
        self.similarity_fct = similarity_fct
        # Under torchrun sbert gathers the candidates whatever this says (the trainer's one switch, losses/gather.py).
        self.gather_across_devices = gather_across_devices

    def scores(self, anchors: Tensor, candidates: Tensor) -> Tensor:
        """(n, m) similarities of anchors to candidates, before the scale."""
        if self.similarity_fct is cos_sim:  # in the autocast dtype (cos_sim widens half floats to float32)
            return cosine_matrix(anchors, candidates)
        return self.similarity_fct(anchors, candidates)

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """Cross-entropy over the scaled similarity matrix; pair labels are not used."""
        anchors = embeddings[0]
        # Under torchrun every rank's candidates (losses/gather.py): this rank's anchors against the global batch.
        columns = [gather_rows(c, self.gather_across_ranks, vectors=True) for c in embeddings[1:]]
        candidates, offset = torch.cat([c for c, _ in columns], dim=0), columns[0][1]
        scores = self.scale * self.scores(anchors, candidates)  # (B, B_global * (columns - 1))
        target = torch.arange(len(anchors), device=anchors.device) + offset
        return functional.cross_entropy(scores, target)
