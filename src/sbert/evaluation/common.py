"""Encoding helpers shared by evaluators."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Protocol

import numpy as np

from sbert.native import native
from sbert.similarity import pairwise_similarity


class Embedder(Protocol):
    """What evaluators need of a model: SentenceEncoder and the baselines (GloVe average) both fit."""

    pair_scorer: ClassVar[bool]  # False: it embeds texts (a cross-encoder, True, scores pairs instead)

    def encode(
        self,
        sentences: Sequence[str],
        *,
        batch_size: int | None = ...,
        backend: str = ...,
        show_progress: bool | None = ...,
        precision: str = ...,
    ) -> np.ndarray:
        """(n, dim) float32 vectors."""
        ...


def encode_columns(
    model: Embedder,
    columns: Sequence[Sequence[str]],
    batch_size: int | None = None,
    backend: str = "torch",
    show_progress: bool | None = None,
    precision: str = "fp32",
) -> list[np.ndarray]:
    """Embed several text columns, encoding each distinct sentence once.

    fp32 by default on every device: a score (and so dev-set model selection during GPU
    training) must not depend on whether the GPU's bf16 or the CPU's fp32 computed it.
    """
    model = native(model)  # a drop-in object is evaluated as sbert's own class
    unique = list(dict.fromkeys(s for col in columns for s in col))
    position = {s: i for i, s in enumerate(unique)}
    vectors = model.encode(
        unique, batch_size=batch_size, backend=backend, show_progress=show_progress, precision=precision
    )
    return [vectors[[position[s] for s in col]] for col in columns]


def row_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of row i of a with row i of b (n,): sbert/similarity.py's, as the server and search score."""
    return pairwise_similarity(a, b, "cosine")
