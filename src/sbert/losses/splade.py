"""SPLADE's training objective: in-batch-negative ranking on dot products, plus FLOPS regularisation.

    loss = CE(a_i · c_j, j = i) + λ_q FLOPS(a) + λ_d FLOPS(c)        FLOPS(x) = Σ_j (mean_i |x_ij|)²

Formal et al. 2021 (SPLADE, SIGIR; v2 arXiv:2109.10086); FLOPS after Paria et al. 2020 (ICLR). The
ranking term scores sparse vectors by their dot product (no cosine, no scale), as SPLADE is
searched; the FLOPS terms push each vocabulary dimension's mean weight over the batch to zero,
which keeps posting lists short. Inputs: (anchor, positive) pairs or (anchor, positive, negative).

As in the SPLADE papers, the FLOPS weights can ramp up quadratically, λ·min(1, (t/T)²) over the
first T = `flops_warmup` batches (`--option flops_warmup=2000`): regularising a fresh model at full
strength from the first step drives its vectors to zero before the ranking term has shaped them.
The batch count is a buffer of the loss, so checkpoints carry it and a resumed run keeps its place.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.errors import SbertError
from sbert.losses.base import Loss
from sbert.losses.cached_mnrl import gradient_cached
from sbert.losses.gather import gather_rows
from sbert.losses.options import refuse_unsupported
from sbert.losses.sparse_parts import FlopsLoss, flops

# sentence-transformers 6.2's SpladeLoss options that sbert's engine does not train (refused unless at these values).
SPLADE_ONLY = {"document_regularizer": "FlopsLoss", "query_regularizer": "FlopsLoss",
               "document_regularizer_threshold": None, "query_regularizer_threshold": None,
               "use_document_regularizer_only": False}  # fmt: skip


class SpladeLoss(Loss):
    """Dot-product MNRL plus FLOPS on queries (`query_weight`) and documents (`document_weight`)."""

    kinds = ("triplet", "pair", "pair-score", "pair-class")
    in_batch_negatives = True
    batches_seen: Tensor

    def __init__(
        self,
        model: nn.Module | None = None,
        loss: nn.Module | None = None,
        document_regularizer_weight: float | None = None,
        query_regularizer_weight: float | None = None,
        document_regularizer: nn.Module | None = None,
        query_regularizer: nn.Module | None = None,
        document_regularizer_threshold: int | None = None,
        query_regularizer_threshold: int | None = None,
        use_document_regularizer_only: bool = False,
        *,
        query_weight: float = 5e-5,
        document_weight: float = 3e-5,
        flops_warmup: int = 0,
    ) -> None:
        """Build in sbert's form (keywords) or in sentence-transformers 6.2's form (model, ranking loss, weights).

        sbert's: `SpladeLoss(query_weight=, document_weight=, flops_warmup=)`; 6.2's: `SpladeLoss(model,
        SparseMultipleNegativesRankingLoss(model), document_regularizer_weight, query_regularizer_weight)`.

        In 6.2's form a query weight of None means no query term; the main loss is any sentence-vector loss of
        sbert's engine (6.2's Sparse* losses are those, on sparse vectors) and its data kinds are the ones this
        loss trains on; the regularizers are FLOPS without thresholds: anything else is refused.
        """
        super().__init__()
        self.name_model(model)
        self.loss: Loss | None = None
        if model is not None or loss is not None or document_regularizer_weight is not None:
            given = {"document_regularizer": _regularizer_name(document_regularizer),
                     "query_regularizer": _regularizer_name(query_regularizer),
                     "document_regularizer_threshold": document_regularizer_threshold,
                     "query_regularizer_threshold": query_regularizer_threshold,
                     "use_document_regularizer_only": use_document_regularizer_only}  # fmt: skip
            refuse_unsupported("SpladeLoss", given, SPLADE_ONLY)
            if document_regularizer_weight is None:
                raise SbertError("SpladeLoss(model, loss, document_regularizer_weight=...): the weight is required")
            self.loss = sentence_vector_loss(loss)
            # The main loss decides which tables fit and whether batches must avoid duplicate texts.
            self.kinds, self.in_batch_negatives = self.loss.kinds, self.loss.in_batch_negatives  # type: ignore[misc,assignment]
            query_weight, document_weight = query_regularizer_weight or 0.0, document_regularizer_weight
        if query_weight < 0 or document_weight < 0:
            raise SbertError(f"splade: FLOPS weights must be >= 0, got {query_weight} and {document_weight}")
        if flops_warmup < 0:
            raise SbertError(f"splade: flops_warmup must be >= 0 batches, got {flops_warmup}")
        self.query_weight, self.document_weight, self.flops_warmup = query_weight, document_weight, flops_warmup
        self.register_buffer("batches_seen", torch.zeros((), dtype=torch.long))

    def ramp(self) -> Tensor:
        """The share of the FLOPS weights in force now: (t/T)² during the warm-up, then 1 (on the device: no sync)."""
        if not self.flops_warmup:
            return torch.ones((), device=self.batches_seen.device)
        return torch.clamp((self.batches_seen.float() / self.flops_warmup) ** 2, max=1.0)

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The main loss (ranking cross-entropy over dot products by default), plus both FLOPS terms at the ramp."""
        anchors = embeddings[0]
        # Under torchrun (losses/gather.py): this rank's anchors against every rank's candidates, as MNRL; FLOPS
        # takes its means over the global batch, a term equal on every rank.
        columns = [gather_rows(c, self.gather_across_ranks, vectors=True) for c in embeddings[1:]]
        candidates, offset = torch.cat([c for c, _ in columns], dim=0), columns[0][1]
        if self.loss is not None:
            ranking = self.loss(embeddings, labels)
        else:
            scores = anchors @ candidates.T  # (B, B_global * (columns - 1))
            target = torch.arange(len(anchors), device=anchors.device) + offset
            ranking = functional.cross_entropy(scores, target)
        share = self.ramp()
        if self.training:
            self.batches_seen += 1
        every_anchor, _ = gather_rows(anchors, self.gather_across_ranks, vectors=True)
        regular = self.query_weight * flops(every_anchor) + self.document_weight * flops(candidates)
        return ranking + share * regular

    def check_model(self, modules: list[nn.Module]) -> None:
        """SPLADE trains a model whose chain ends in SpladePooling."""
        if not modules or type(modules[-1]).__name__ != "SpladePooling":
            names = ", ".join(type(m).__name__ for m in modules)
            raise SbertError(f"objective 'splade' trains a SPLADE model (ending in SpladePooling), not {names}")


def _regularizer_name(module: nn.Module | None) -> str:
    """A regularizer as its class name (None: FLOPS, the default); a thresholded FLOPS counts as its threshold."""
    if module is None:
        return "FlopsLoss"
    if isinstance(module, FlopsLoss) and module.threshold is not None:
        return f"FlopsLoss(threshold={module.threshold})"
    return type(module).__name__


def sentence_vector_loss(loss: nn.Module | None, owner: str = "SpladeLoss") -> Loss:
    """6.2's main loss inside SpladeLoss (or CSRLoss): a sentence-vector loss the engine computes from vectors."""
    if not isinstance(loss, Loss) or loss.needs_model or loss.token_level or loss.needs_features:
        raise SbertError(
            f"{owner}(loss={type(loss).__name__}): sbert trains it with a sentence-vector "
            "loss of sbert.sparse_encoder.losses (SparseMultipleNegativesRankingLoss, ...)"
        )
    return loss


class CachedSpladeLoss(SpladeLoss):
    """SpladeLoss with the encoder run in mini-batches and the vectors' gradients cached (6.2's GradCache form).

    The same loss and gradient as SpladeLoss; memory holds one mini-batch's activations at a time, so the
    batch (and its in-batch negatives) can grow past what fits.
    """

    needs_model = True

    def __init__(
        self,
        model: nn.Module | None,
        loss: nn.Module,
        document_regularizer_weight: float,
        query_regularizer_weight: float | None = None,
        document_regularizer: nn.Module | None = None,
        query_regularizer: nn.Module | None = None,
        document_regularizer_threshold: int | None = None,
        query_regularizer_threshold: int | None = None,
        use_document_regularizer_only: bool = False,
        mini_batch_size: int = 32,
        mini_batch_num_tokens: int | None = None,
        show_progress_bar: bool = False,
    ) -> None:
        super().__init__(model, loss, document_regularizer_weight, query_regularizer_weight, document_regularizer,
                         query_regularizer, document_regularizer_threshold, query_regularizer_threshold,
                         use_document_regularizer_only)  # fmt: skip
        refuse_unsupported("CachedSpladeLoss", {"mini_batch_num_tokens": mini_batch_num_tokens},
                           {"mini_batch_num_tokens": None})  # fmt: skip
        if mini_batch_size < 1:
            raise SbertError(f"CachedSpladeLoss: mini_batch_size={mini_batch_size} must be >= 1")
        self.mini_batch_size, self.show_progress_bar = mini_batch_size, show_progress_bar

    def forward_model(self, model: nn.Module, columns: list[dict[str, Tensor]], labels: Tensor | None) -> Tensor:
        """The SPLADE loss of the batch; its backward replays the encoder one mini-batch at a time."""
        return gradient_cached(model, columns, self.mini_batch_size, "sentence_embedding",
                               lambda vectors: self.forward(vectors, labels))  # fmt: skip
