"""A cross-encoder's objectives over several documents per query: margins, and the learning-to-rank losses.

On sbert's engine each document of a row is one column of (query, document) pairs (reranker/training.py's
PairChain scores each column), so a loss reads a (B, K) matrix of scores:

    MarginMSELoss   MSE(s(q, p) - s(q, n_k), teacher margin_k)          rows (query, positive, negatives...)
    ListNetLoss     CE(softmax(labels), softmax(s))                     (Cao et al. 2007)
    PListMLELoss    -Σ_i w_i log P(doc i first among docs i..K)          (Lan et al. 2014); ListMLELoss: w = 1
    LambdaLoss      -Σ_{i,j: y_i > y_j} w_ij log σ(σ_s (s_i - s_j))     (Wang et al. 2018); RankNetLoss: w = 1
    ADRMSELoss      Σ_i (rank_i - approx_rank_i)² / log2(1 + rank_i)     (Rank-DistiLLM's approximate ranks)

For the list losses a row is (query, [documents], [labels]) and rows may hold different numbers of
documents: the shorter ones are padded (their labels NaN, compat/cross_trainer.py) and masked here,
as sentence-transformers 6.2 masks its padded score matrix.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.losses.margin_distill import margins_and_targets
from sbert.losses.pair_logits import Activation, PairLogitLoss

# The pad values 6.2 puts in its score matrix before each loss masks them (they shape no value but the masked ones).
LOW = -1e16


class ScoreColumnsLoss(PairLogitLoss):
    """A loss over K columns of pairs: the activated (B, K) score matrix and the row labels."""

    # "columns": (query, positive, negatives...) text columns; "lists": (query, [documents], [labels]).
    layout = "columns"

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The columns' logits side by side, activated, then `scores_loss`."""
        assert labels is not None
        scores = self.activation_fn(torch.cat([e.reshape(-1, 1) for e in embeddings], dim=1).float())
        return self.scores_loss(scores, labels.float().reshape(len(scores), -1))

    def scores_loss(self, scores: Tensor, labels: Tensor) -> Tensor:
        """The loss of a (B, K) score matrix against the labels."""
        raise NotImplementedError


class MarginMSELoss(ScoreColumnsLoss):
    """MSE of the score margins of the positive over each negative against a teacher's (6.2's CE MarginMSELoss)."""

    def __init__(self, model: nn.Module | None = None, activation_fn: Activation = nn.Identity(),  # noqa: B008
                 **kwargs: str) -> None:  # fmt: skip
        super().__init__(model, activation_fn)
        self.reduction = kwargs.get("reduction", "mean")

    def scores_loss(self, scores: Tensor, labels: Tensor) -> Tensor:
        """Labels: one margin per negative, or the teacher's positive and negative scores."""
        margins, target = margins_and_targets(scores, labels)
        return functional.mse_loss(margins, target, reduction=self.reduction)


class ListwiseLoss(ScoreColumnsLoss):
    """What the list losses share: the rows' lists, their padding mask, `mini_batch_size` (6.2's memory knob)."""

    layout = "lists"

    def __init__(self, model: nn.Module | None = None, activation_fn: Activation | None = nn.Identity(),  # noqa: B008
                 mini_batch_size: int | None = None) -> None:  # fmt: skip
        super().__init__(model, activation_fn or nn.Identity())
        if mini_batch_size is not None:
            warnings.warn(f"{type(self).__name__}: sbert's engine batches the pairs by its token budget; "
                          "mini_batch_size is not used", UserWarning, stacklevel=3)  # fmt: skip
        self.mini_batch_size = mini_batch_size

    def scores_loss(self, scores: Tensor, labels: Tensor) -> Tensor:
        """The list loss on the real documents (a NaN label marks a padded one)."""
        mask = ~torch.isnan(labels)
        return self.list_loss(scores, labels.nan_to_num(0.0), mask)

    def list_loss(self, scores: Tensor, labels: Tensor, mask: Tensor) -> Tensor:
        """The loss of (B, K) scores and labels, `mask` True on real documents."""
        raise NotImplementedError


class ListNetLoss(ListwiseLoss):
    """Cross-entropy between the labels' softmax and the scores' softmax over each query's documents."""

    def list_loss(self, scores: Tensor, labels: Tensor, mask: Tensor) -> Tensor:
        """Top-one probabilities, compared per query and averaged."""
        target = labels.masked_fill(~mask, -torch.inf).softmax(dim=1)
        return functional.cross_entropy(scores.masked_fill(~mask, LOW), target)


class PListMLELambdaWeight(nn.Module):
    """Position weights of PListMLE: 2^(n - rank) - 1 style, highest for the first positions (or `rank_discount_fn`)."""

    def __init__(self, rank_discount_fn: nn.Module | None = None) -> None:
        super().__init__()
        self.rank_discount_fn = rank_discount_fn

    def forward(self, mask: Tensor) -> Tensor:
        """(B, K) weights, 0 on padding; exponents shifted for lists over 127 so float32 does not overflow."""
        if self.rank_discount_fn is not None:
            return self.rank_discount_fn(mask)
        n = mask.sum(dim=1, keepdim=True)
        ranks = torch.arange(1, mask.size(1) + 1, device=mask.device).expand_as(mask)
        shift = (n - 127).clamp_min(0)
        return (torch.pow(2.0, n - ranks - shift) - torch.pow(2.0, -shift)) * mask


class PListMLELoss(ListwiseLoss):
    """Plackett-Luce likelihood of the documents' order (given, or by label), position-weighted."""

    def __init__(self, model: nn.Module | None = None,
                 lambda_weight: PListMLELambdaWeight | None = PListMLELambdaWeight(),  # noqa: B008
                 activation_fn: Activation | None = nn.Identity(), mini_batch_size: int | None = None,  # noqa: B008
                 respect_input_order: bool = True) -> None:  # fmt: skip
        super().__init__(model, activation_fn, mini_batch_size)
        self.lambda_weight, self.respect_input_order, self.eps = lambda_weight, respect_input_order, 1e-10

    def list_loss(self, scores: Tensor, labels: Tensor, mask: Tensor) -> Tensor:
        """The mean over queries of -Σ_i w_i log softmax_i(scores of documents i..K)."""
        if not mask.any():
            return scores.sum() * 0.0
        scores = scores.masked_fill(~mask, 1e-16)
        if not self.respect_input_order:  # the ground-truth order is the labels' (descending)
            _, order = labels.masked_fill(~mask, -torch.inf).sort(descending=True, dim=1)
            scores, ordered_mask = scores.gather(1, order), mask.gather(1, order)
        else:
            ordered_mask = mask
        held = scores.masked_fill(~ordered_mask, torch.finfo(scores.dtype).min)
        log_normalizers = torch.flip(torch.logcumsumexp(torch.flip(held, [1]), dim=1), [1])
        log_probs = scores - log_normalizers
        if self.lambda_weight is not None:
            weights = self.lambda_weight(mask)
            log_probs = log_probs * weights / (weights.sum(dim=1, keepdim=True) + self.eps)
        per_query = -log_probs.masked_fill(~ordered_mask, 0.0).sum(dim=1)
        return per_query.mean() if per_query.any() else scores.sum() * 0.0


class ListMLELoss(PListMLELoss):
    """PListMLE without position weights."""

    def __init__(self, model: nn.Module | None = None, activation_fn: Activation | None = nn.Identity(),  # noqa: B008
                 mini_batch_size: int | None = None, respect_input_order: bool = True) -> None:  # fmt: skip
        super().__init__(model, None, activation_fn, mini_batch_size, respect_input_order)


class ADRMSELoss(ListwiseLoss):
    """Discounted squared error between each document's rank by label and its differentiable rank by score."""

    def __init__(self, model: nn.Module | None = None, alpha: float = 1.0,
                 activation_fn: Activation | None = nn.Identity(),  # noqa: B008
                 mini_batch_size: int | None = None) -> None:  # fmt: skip
        super().__init__(model, activation_fn, mini_batch_size)
        self.alpha = alpha

    def approximate_ranks(self, scores: Tensor, mask: Tensor) -> Tensor:
        """1 + Σ_j σ(α (s_j - s_i)) over the real documents j ≠ i (the i = j term is 1/2, taken back)."""
        pairwise = torch.sigmoid(self.alpha * (scores.unsqueeze(1) - scores.unsqueeze(2))) * mask.unsqueeze(1).float()
        return 1.0 + pairwise.sum(dim=2) - 0.5 * mask.float()

    def list_loss(self, scores: Tensor, labels: Tensor, mask: Tensor) -> Tensor:
        """The mean over real documents of (true rank - approximate rank)² / log2(1 + true rank); ties share ranks."""
        others = mask.unsqueeze(1)
        higher = ((labels.unsqueeze(1) > labels.unsqueeze(2)) & others).sum(dim=-1).float()
        tied = ((labels.unsqueeze(1) == labels.unsqueeze(2)) & others).sum(dim=-1).float()
        true_ranks = higher + (tied + 1.0) / 2.0
        error = (true_ranks - self.approximate_ranks(scores.masked_fill(~mask, LOW), mask)) ** 2
        return (error / torch.log2(true_ranks + 1.0) * mask.float()).sum() / mask.sum()
