"""`SparseEncoderTrainer`: sentence-transformers 6.2's SPLADE training API on sbert's one training engine.

The drop-in trainer of sentence vectors with a SPLADE default: 6.2's `SpladeLoss` around the sparse
MNRL, query FLOPS 5e-5 and document FLOPS 3e-5. The engine trains the SparseEncoder as its
SentenceEncoder chain (sharing the weights: the object the user holds is the one trained) and saves
sentence-transformers' SparseEncoder layout.
"""

from __future__ import annotations

from typing import Any

from sbert.compat.args_map import EngineSettings
from sbert.compat.trainer import SentenceTransformerTrainer
from sbert.compat.training_args import SentenceTransformerTrainingArguments
from sbert.losses import Loss, SparseMultipleNegativesRankingLoss, SpladeLoss


class SparseEncoderTrainingArguments(SentenceTransformerTrainingArguments):
    """The same fields and defaults as SentenceTransformerTrainingArguments (as in 6.2)."""


class SparseEncoderTrainer(SentenceTransformerTrainer):
    """Trains a SparseEncoder (SPLADE) with sentence-transformers' arguments; SpladeLoss by default."""

    training_args_class = SparseEncoderTrainingArguments

    def _begin(self, settings: EngineSettings, per_epoch: int) -> None:
        """6.2's SPLADE regularizer schedule: FLOPS weights from 0 to full, quadratically, over a third of the steps.

        6.2 adds that schedule as a callback to every SpladeLoss; here it is the loss's own `flops_warmup`
        (counted in micro-batches, hence the accumulation factor), kept in its checkpoints.
        """
        super()._begin(settings, per_epoch)
        ramp = max(1, int(self.state.max_steps / 3)) * int(settings.stage["grad_accum"])
        for loss in self.loss.values():
            if isinstance(loss, SpladeLoss) and loss.model is not None and not loss.flops_warmup:
                loss.flops_warmup = ramp

    def _default_loss(self, data: Any) -> Loss:
        return self.get_default_loss(self.model)

    def get_default_loss(self, model: Any) -> Loss:
        """6.2's default: SpladeLoss over SparseMultipleNegativesRankingLoss, FLOPS 5e-5 (queries), 3e-5 (documents)."""
        return SpladeLoss(model, SparseMultipleNegativesRankingLoss(model), document_regularizer_weight=3e-5,
                          query_regularizer_weight=5e-5)  # fmt: skip
