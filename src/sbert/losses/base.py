"""What every training objective provides."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from torch import Tensor, nn


class Loss(nn.Module):
    """Maps the sentence embeddings of a batch (one tensor per text column) and labels to a scalar."""

    # The dataset kinds this objective can train on (see sbert.data.common.Kind).
    kinds: ClassVar[tuple[str, ...]]
    # True for objectives that read token-level outputs, not only the sentence vectors.
    needs_features: ClassVar[bool] = False
    # True for objectives that run the encoder themselves (the cached contrastive loss).
    needs_model: ClassVar[bool] = False
    # True for objectives whose other batch rows are negatives: batches then hold no text twice.
    in_batch_negatives: ClassVar[bool] = False
    # True for objectives that score token matrices (late interaction): they train multi-vector models only.
    token_level: ClassVar[bool] = False
    # True for objectives whose model keeps per-forward state (CSR's latent ages): columns never share a forward.
    separate_columns: ClassVar[bool] = False
    # Under torchrun, batch-level objectives see every rank's rows (losses/gather.py); the trainer sets it.
    gather_across_ranks: bool = True

    @property
    def model(self) -> nn.Module | None:
        """The encoder named at construction (sentence-transformers' `Loss(model, ...)`), or None."""
        return self.__dict__.get("_named_model")

    def name_model(self, model: nn.Module | None) -> None:
        """Remember `model` without registering it: the trainer holds the encoder, a checkpoint stores it once."""
        self.__dict__["_named_model"] = model

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The loss of one batch."""
        raise NotImplementedError

    def forward_features(self, features: list[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """The loss from each column's whole features dict (token vectors, mask, sentence vector)."""
        return self([f["sentence_embedding"] for f in features], labels)

    def forward_model(self, model: nn.Module, columns: list[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """The loss of one batch of padded token ids per column, embedding them itself (`needs_model`)."""
        raise NotImplementedError

    def check_model(self, modules: list[nn.Module]) -> None:
        """Raise SbertError before training when the encoder's chain cannot feed this objective."""

    def save_head(self, path: Path) -> None:
        """Write trained parameters that live outside the encoder (none by default)."""
