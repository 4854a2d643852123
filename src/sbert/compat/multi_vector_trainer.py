"""`MultiVectorEncoderTrainer`: sentence-transformers 6.2's ColBERT training API on sbert's one training engine.

The drop-in trainer of sentence vectors with a late-interaction default: 6.2's
`MultiVectorMultipleNegativesRankingLoss` (MaxSim, in-batch negatives, scale 1). The engine trains the
MultiVectorEncoder itself (the object the user holds), its first column as queries and the others as
documents, each routed by its task (length, expansion, skiplist) and, as in 6.2, given no task prompt
(the arguments' `prompts` add one), and saves the folder in its layout.
"""

from __future__ import annotations

from typing import Any

from sbert.compat.trainer import SentenceTransformerTrainer
from sbert.compat.training_args import MultiVectorEncoderTrainingArguments
from sbert.losses import Loss
from sbert.losses.multivector_st import MultiVectorMultipleNegativesRankingLoss


class MultiVectorEncoderTrainer(SentenceTransformerTrainer):
    """Trains a MultiVectorEncoder (ColBERT) with sentence-transformers' arguments; in-batch MaxSim MNRL by default."""

    training_args_class = MultiVectorEncoderTrainingArguments

    def _default_loss(self, data: Any) -> Loss:
        return self.get_default_loss(self.model)

    def get_default_loss(self, model: Any) -> Loss:
        """6.2's default: MultiVectorMultipleNegativesRankingLoss(model)."""
        return MultiVectorMultipleNegativesRankingLoss(model)
