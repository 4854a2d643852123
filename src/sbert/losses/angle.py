"""AnglE loss (Li & Li 2023, arXiv:2309.12871): CoSENT on the angle similarity of the pair.

    loss = log(1 + sum_{(i,j),(k,l): y_ij > y_kl} exp(scale * (s_kl - s_ij)))    s = |cos + sin|

The vectors are read as complex numbers (dimension j paired with j + D/2); the angle term keeps the
gradient alive where cosines saturate. Inputs: pair-score datasets.
"""

from __future__ import annotations

from torch import nn

from sbert.losses.cosent import CoSENTLoss
from sbert.vectors.scores import pairwise_angle_sim


class AnglELoss(CoSENTLoss):
    """CoSENT with `pairwise_angle_sim` (`AnglELoss(model, scale=20.0)`)."""

    def __init__(self, model: nn.Module | None = None, scale: float = 20.0) -> None:
        super().__init__(model, scale, similarity_fct=pairwise_angle_sim)
