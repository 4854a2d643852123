"""Late-interaction (ColBERT) objectives: in-batch contrastive and KL distillation, both scored by MaxSim.

    maxsim(q, d) = sum_i max_j q_i . d_j   over scored query tokens i and scored document tokens j

Contrastive (Khattab & Zaharia 2020; sentence-transformers' MultiVectorMultipleNegativesRankingLoss,
PyLate's Contrastive): for B queries and N document columns (positive, hard negatives),
    scores[i, j * N + n] = maxsim(q_i, column n of row j);  loss = cross-entropy(scale * scores, i * N)
Distillation (ColBERTv2, Santhanam et al. 2022; MultiVectorDistillKLDivLoss, PyLate's Distillation):
    s[i, n] = maxsim(q_i, column n of row i);  t = teacher scores (B, N)
    loss = KL(softmax(t / T_t) || softmax(s / T_s)) * T_s^2   (batch mean)
Inputs: each column's features, with `token_embeddings` (B, T, dim) and `scored_mask` (B, T).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.losses.base import Loss
from sbert.losses.cached_mnrl import gradient_cached
from sbert.losses.gather import gather_rows
from sbert.multivector.tokens import SCORED
from sbert.vectors.maxsim import EMPTY_DOCUMENT_SCORE

# Elements of one (queries, documents, query tokens, document tokens) score block.
_BLOCK_ELEMENTS = 64 * 1024 * 1024


def maxsim_scores(q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor) -> Tensor:
    """(Bq, Bd) MaxSim of padded queries (Bq, Tq, dim) with padded documents (Bd, Td, dim); differentiable."""
    out = []
    per_doc = max(1, _BLOCK_ELEMENTS // max(q.shape[0] * q.shape[1] * d.shape[1], 1))
    q_scored = q_mask.to(q.dtype)
    for start in range(0, d.shape[0], per_doc):  # blocks of documents bound the 4-D intermediate
        block, mask = d[start : start + per_doc], d_mask[start : start + per_doc]
        sims = torch.einsum("aqd,btd->abqt", q, block)  # (Bq, block, Tq, Td)
        best = _best_token(sims, mask.bool()[None, :, None, :], mask.bool().any(-1)[None, :, None])
        out.append(_empty_last((best * q_scored[:, None, :]).sum(-1), mask.bool().any(-1)[None, :]))
    return torch.cat(out, dim=1)


def maxsim_pairwise(q: Tensor, q_mask: Tensor, d: Tensor, d_mask: Tensor) -> Tensor:
    """(B,) MaxSim of query i with document i."""
    sims = torch.einsum("bqd,btd->bqt", q, d)  # (B, Tq, Td)
    best = _best_token(sims, d_mask.bool()[:, None, :], d_mask.bool().any(-1)[:, None])
    return _empty_last((best * q_mask.to(q.dtype)).sum(-1), d_mask.bool().any(-1))


def _best_token(sims: Tensor, scored: Tensor, has_tokens: Tensor) -> Tensor:
    """The max over the last axis (document tokens) among `scored` ones; 0 for a document with none."""
    best = sims.masked_fill(~scored, float("-inf")).amax(dim=-1).clamp_min(torch.finfo(sims.dtype).min)
    return torch.where(has_tokens, best, torch.zeros_like(best))


def _empty_last(scores: Tensor, has_tokens: Tensor) -> Tensor:
    """A document with no scored token gets EMPTY_DOCUMENT_SCORE, as the numpy MaxSim and sentence-transformers give."""
    return scores.masked_fill(~has_tokens, EMPTY_DOCUMENT_SCORE)


def _tokens(features: dict[str, Any]) -> tuple[Tensor, Tensor]:
    return features["token_embeddings"], features[SCORED]


def _stack_columns(columns: list[dict[str, Any]]) -> tuple[Tensor, Tensor]:
    """Document columns as (B, N, T, dim) and (B, N, T), padded to the longest column."""
    width = max(c["token_embeddings"].shape[1] for c in columns)
    vecs = [functional.pad(c["token_embeddings"], (0, 0, 0, width - c["token_embeddings"].shape[1])) for c in columns]
    masks = [functional.pad(c[SCORED], (0, width - c[SCORED].shape[1])) for c in columns]
    return torch.stack(vecs, dim=1), torch.stack(masks, dim=1)


class MultiVectorContrastiveLoss(Loss):
    """Each query's own positive among every document of the batch (positives and hard negatives), by MaxSim."""

    kinds = ("triplet", "pair", "pair-score", "pair-class")
    needs_features = True
    in_batch_negatives = True
    token_level = True

    def __init__(self, scale: float = 1.0) -> None:
        super().__init__()
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale}")
        self.scale = scale  # 1 / temperature; MaxSim already spans ~[0, query tokens]

    def forward_features(self, features: list[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """Cross-entropy over the (B, B * N) MaxSim matrix, query-major as sentence-transformers lays it out."""
        q, q_mask = _tokens(features[0])
        docs, masks = _stack_columns(features[1:])  # (B, N, T, dim)
        # Under torchrun, every rank's documents (losses/gather.py): this rank's queries against the global batch.
        docs, offset = gather_rows(docs, self.gather_across_ranks)
        masks, _ = gather_rows(masks.to(docs.dtype), self.gather_across_ranks)
        b, n = docs.shape[0], docs.shape[1]
        flat = maxsim_scores(q, q_mask, docs.flatten(0, 1), masks.flatten(0, 1))  # column j * N + n: row j, column n
        target = (torch.arange(q.shape[0], device=q.device) + offset) * n
        return functional.cross_entropy(flat.reshape(q.shape[0], b * n) * self.scale, target)


class CachedMultiVectorContrastiveLoss(MultiVectorContrastiveLoss):
    """MultiVectorContrastiveLoss with the encoder run in mini-batches (GradCache, losses/cached_mnrl.py).

    The same loss value and gradients on the same batch; peak memory is one mini-batch's activations
    plus the batch's token matrices, so the in-batch negatives can outnumber what fits at once.
    Options: scale (1.0), mini_batch (32).
    """

    needs_model = True

    def __init__(self, scale: float = 1.0, mini_batch: int = 32) -> None:
        super().__init__(scale)
        if mini_batch < 1:
            raise ValueError(f"cached-colbert: mini_batch={mini_batch} must be >= 1")
        self.mini_batch = mini_batch

    def forward_model(self, model: nn.Module, columns: list[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """The loss of the batch; its backward replays the encoder one mini-batch at a time."""
        return cached_token_loss(model, columns, self.mini_batch, self.forward_features, labels)


FeaturesLoss = Callable[[list[dict[str, Any]], Tensor | None], Tensor]


def cached_token_loss(model: nn.Module, columns: list[dict[str, Any]], mini_batch: int, loss: FeaturesLoss,
                      labels: Tensor | None) -> Tensor:  # fmt: skip
    """`loss` of the columns' token matrices, the encoder run (and replayed in the backward) a mini-batch at a time.

    `loss` takes each column's features (`token_embeddings`, `scored_mask`), as `forward_features` does.
    """

    def loss_of(tokens: list[Tensor]) -> Tensor:
        features = [{"token_embeddings": t, SCORED: c[SCORED]} for t, c in zip(tokens, columns, strict=True)]
        return loss(features, labels)

    return gradient_cached(model, columns, mini_batch, "token_embeddings", loss_of)


class MultiVectorDistillLoss(Loss):
    """KL divergence between the teacher's and the student's score distributions over each query's documents."""

    kinds = ("distill",)  # query, documents..., and a list of one teacher score per document (data/teacher_scores.py)
    needs_features = True
    token_level = True

    def __init__(self, temperature: float = 1.0, student_temperature: float | None = None,
                 teacher_temperature: float | None = None) -> None:  # fmt: skip
        super().__init__()
        self.student_t = student_temperature or temperature
        self.teacher_t = teacher_temperature or temperature
        if not (self.student_t > 0 and self.teacher_t > 0):
            raise ValueError("temperatures must be positive")

    def forward_features(self, features: list[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """KL(teacher || student) over the N documents of each query, times the student temperature squared."""
        if labels is None or len(features) < 3:
            raise ValueError("distillation needs a query, at least two documents and a teacher score for each")
        q, q_mask = _tokens(features[0])
        scores = torch.stack([maxsim_pairwise(q, q_mask, *_tokens(column)) for column in features[1:]], dim=1)
        student = functional.log_softmax(scores / self.student_t, dim=-1)
        teacher = functional.log_softmax(labels.detach().to(scores.dtype) / self.teacher_t, dim=-1)
        return functional.kl_div(student, teacher, reduction="batchmean", log_target=True) * self.student_t**2
