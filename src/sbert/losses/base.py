"""What every training objective provides."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from torch import Tensor, nn


class Loss(nn.Module):
    """Maps the sentence embeddings of a batch (one tensor per text column) and labels to a scalar."""

    # The dataset kinds this objective can train on (see sbert.data.common.Kind).
    kinds: ClassVar[tuple[str, ...]]

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The loss of one batch."""
        raise NotImplementedError

    def save_head(self, path: Path) -> None:
        """Write trained parameters that live outside the encoder (none by default)."""
