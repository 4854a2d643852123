"""Encoding helpers shared by evaluators."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Embedder(Protocol):
    """What evaluators need of a model: SentenceEncoder and the baselines (GloVe average) both fit."""

    def encode(
        self,
        sentences: Sequence[str],
        *,
        batch_size: int | None = ...,
        backend: str = ...,
        show_progress: bool | None = ...,
    ) -> np.ndarray:
        """(n, dim) float32 vectors."""
        ...


def encode_columns(
    model: Embedder,
    columns: Sequence[Sequence[str]],
    batch_size: int | None = None,
    backend: str = "torch",
    show_progress: bool | None = None,
) -> list[np.ndarray]:
    """Embed several text columns, encoding each distinct sentence once."""
    unique = list(dict.fromkeys(s for col in columns for s in col))
    position = {s: i for i, s in enumerate(unique)}
    vectors = model.encode(unique, batch_size=batch_size, backend=backend, show_progress=show_progress)
    return [vectors[[position[s] for s in col]] for col in columns]


def row_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of row i of a with row i of b (n,)."""
    num = (a * b).sum(axis=1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return num / np.maximum(den, 1e-12)
