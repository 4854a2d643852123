"""LambdaLoss (Wang et al. 2018, "The LambdaLoss Framework for Ranking Metric Optimization") and RankNet.

    loss = -Σ_{i,j} w_ij log2 σ(σ_s (s_i - s_j)) / #pairs

over the pairs of a query's documents in predicted order where i's label is above j's (any pair
for NDCGLoss1) and i or j is among the first k. The weighting scheme w_ij names the metric the loss
bounds: none (RankNet), NDCG-Loss1, NDCG-Loss2, LambdaRank, NDCG-Loss2++ (the default, μ = 10).
Gains are (2^label - 1) / the query's ideal DCG@k; discounts log2(1 + position).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.losses.listwise import LOW, ListwiseLoss
from sbert.losses.pair_logits import Activation


class BaseWeightingScheme(nn.Module):
    """A LambdaLoss weighting: (gain, discount, labels in predicted order) -> pair weights."""

    def forward(self, gain: Tensor, discount: Tensor, true_sorted: Tensor) -> Tensor:
        """The weight of each pair (broadcast to (B, K, K))."""
        raise NotImplementedError


class NoWeightingScheme(BaseWeightingScheme):
    """Every pair weighs 1 (RankNet)."""

    def forward(self, gain: Tensor, discount: Tensor, true_sorted: Tensor) -> Tensor:
        """1."""
        return torch.tensor(1.0, device=gain.device)


class NDCGLoss1Scheme(BaseWeightingScheme):
    """w_ij = G_i / D_i."""

    def forward(self, gain: Tensor, discount: Tensor, true_sorted: Tensor) -> Tensor:
        """Gain over discount of the first document of the pair."""
        return (gain / discount)[:, :, None]


class NDCGLoss2Scheme(BaseWeightingScheme):
    """w_ij = |1/D_|i-j| - 1/D_|i-j|+1| · |G_i - G_j|."""

    def forward(self, gain: Tensor, discount: Tensor, true_sorted: Tensor) -> Tensor:
        """The discount step between the pair's positions, times their gain gap."""
        positions = torch.arange(1, gain.shape[1] + 1, device=gain.device)
        gaps = torch.abs(positions[:, None] - positions[None, :])
        steps = torch.abs(torch.abs(discount[0, gaps - 1]).pow(-1.0) - torch.abs(discount[0, gaps]).pow(-1.0))
        steps = steps * (1 - torch.eye(len(positions), device=gain.device))  # the diagonal weighs 0
        return steps[None, :, :] * torch.abs(gain[:, :, None] - gain[:, None, :])


class LambdaRankScheme(BaseWeightingScheme):
    """w_ij = |1/D_i - 1/D_j| · |G_i - G_j| (LambdaRank's ΔNDCG)."""

    def forward(self, gain: Tensor, discount: Tensor, true_sorted: Tensor) -> Tensor:
        """The discount gap of the pair's positions, times their gain gap."""
        inverse = discount.pow(-1.0)
        return torch.abs(inverse[:, :, None] - inverse[:, None, :]) * torch.abs(gain[:, :, None] - gain[:, None, :])


class NDCGLoss2PPScheme(BaseWeightingScheme):
    """NDCG-Loss2++: μ · NDCG-Loss2 + LambdaRank."""

    def __init__(self, mu: float = 10.0) -> None:
        super().__init__()
        self.mu = mu
        self.ndcg_loss2, self.lambda_rank = NDCGLoss2Scheme(), LambdaRankScheme()

    def forward(self, gain: Tensor, discount: Tensor, true_sorted: Tensor) -> Tensor:
        """The two weights, mixed by μ."""
        return self.mu * self.ndcg_loss2(gain, discount, true_sorted) + self.lambda_rank(gain, discount, true_sorted)


class LambdaLoss(ListwiseLoss):
    """`LambdaLoss(model, weighting_scheme=NDCGLoss2PPScheme(), k=None, sigma=1.0, reduction_log="binary")`."""

    def __init__(self, model: nn.Module | None = None,
                 weighting_scheme: BaseWeightingScheme | None = NDCGLoss2PPScheme(),  # noqa: B008
                 k: int | None = None, sigma: float = 1.0, eps: float = 1e-10, reduction_log: str = "binary",
                 activation_fn: Activation | None = nn.Identity(),  # noqa: B008
                 mini_batch_size: int | None = None) -> None:  # fmt: skip
        super().__init__(model, activation_fn, mini_batch_size)
        self.weighting_scheme = weighting_scheme or NoWeightingScheme()
        self.k, self.sigma, self.eps, self.reduction_log = k, sigma, eps, reduction_log

    def list_loss(self, scores: Tensor, labels: Tensor, mask: Tensor) -> Tensor:
        """The weighted pairwise logistic loss over the counted pairs, their mean."""
        n = scores.shape[1]
        labels = labels.masked_fill(~mask, -torch.inf)
        ordered, by_prediction = scores.masked_fill(~mask, LOW).sort(descending=True, dim=-1)
        ideal, _ = labels.sort(descending=True, dim=-1)
        true = labels.gather(1, by_prediction)
        label_gaps = true[:, :, None] - true[:, None, :]
        counted = torch.isfinite(label_gaps)
        if not isinstance(self.weighting_scheme, NDCGLoss1Scheme):
            counted = counted & (label_gaps > 0)
        k = self.k or n
        top = torch.zeros((n, n), dtype=torch.bool, device=scores.device)
        top[:k, :] = True
        top[:, :k] = True
        true, ideal = true.clamp(min=0.0), ideal.clamp(min=0.0)
        discount = torch.log2(1.0 + torch.arange(1, n + 1, device=scores.device).float())[None, :]
        ideal_dcg = ((torch.pow(2, ideal) - 1) / discount)[:, :k].sum(dim=-1).clamp(min=self.eps)
        gain = (torch.pow(2, true) - 1) / ideal_dcg[:, None]
        weights = self.weighting_scheme(gain, discount, true)
        differences = (ordered[:, :, None] - ordered[:, None, :]).clamp(min=-1e8, max=1e8).nan_to_num(0.0)
        losses = weights * functional.logsigmoid(self.sigma * differences)
        if self.reduction_log == "binary":
            losses = losses / math.log(2)
        kept = losses[counted & top]
        return -kept.sum() / max(kept.numel(), 1)


class RankNetLoss(LambdaLoss):
    """LambdaLoss without weights: the pairwise logistic loss of Burges et al. 2005."""

    def __init__(self, model: nn.Module | None = None, k: int | None = None, sigma: float = 1.0, eps: float = 1e-10,
                 reduction_log: str = "binary", activation_fn: Activation | None = nn.Identity(),  # noqa: B008
                 mini_batch_size: int | None = None) -> None:  # fmt: skip
        super().__init__(model, NoWeightingScheme(), k, sigma, eps, reduction_log, activation_fn, mini_batch_size)
