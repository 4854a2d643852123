"""Position ids as the backbone numbers them, for token rows laid end to end (a packed batch).

Most encoders number a row's tokens 0, 1, 2, ...; the RoBERTa family numbers them as fairseq does
(transformers' `create_position_ids_from_input_ids`): padding tokens sit at `padding_idx` and are not
counted, every other token at `padding_idx` + (its count of non-padding tokens so far), so the first
is `padding_idx + 1`. A padding token inside a text (`"fill the <pad> here"`) is skipped the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# Encoders that number positions from padding_idx + 1 (transformers' create_position_ids_from_input_ids).
_OFFSET_POSITION_MODELS = {"roberta", "xlm-roberta", "camembert", "mpnet", "data2vec-text", "longformer"}


def restart_positions(lengths: np.ndarray) -> np.ndarray:
    """Each token's position in its own sequence, for sequences of `lengths` laid end to end: (B,) -> (N,)."""
    return np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)


@dataclass(frozen=True)
class Positions:
    """A backbone's numbering rule: plain ranges (padding_idx None), or RoBERTa's around `padding_idx`."""

    padding_idx: int | None = None

    @property
    def first(self) -> int:
        """The position id of a row's first (non-padding) token."""
        return 0 if self.padding_idx is None else self.padding_idx + 1

    def of(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Position ids (N,) int64 for the token ids `ids` (N,) of rows of `lengths` (B,) laid end to end."""
        if self.padding_idx is None:
            return restart_positions(lengths)
        counted = (ids != self.padding_idx).astype(np.int64)  # (N,)
        running = np.cumsum(counted)  # non-padding tokens up to and including each, across rows
        starts = np.cumsum(lengths) - lengths  # (B,) each row's first token
        before = np.concatenate(([0], running))[starts]  # (B,) non-padding tokens in the rows before
        return (running - np.repeat(before, lengths)) * counted + self.padding_idx


def position_limit(config: Any) -> int:
    """The longest input the encoder's position table can take (a two-tower model's: its text tower's)."""
    config = getattr(config, "text_config", None) or config
    return int(getattr(config, "max_position_embeddings", 512) or 512) - position_rule(config).first


def position_rule(config: Any) -> Positions:
    """How the backbone numbers a row's tokens: RoBERTa's rule around its padding index, else a plain range.

    The RoBERTa family's padding index is config.pad_token_id (0 is a valid one); MPNet's is fixed at 1.
    """
    model_type = getattr(config, "model_type", "")
    if model_type == "mpnet":
        return Positions(1)
    pad = getattr(config, "pad_token_id", None)
    if model_type in _OFFSET_POSITION_MODELS:
        return Positions(1 if pad is None else int(pad))
    return Positions()
