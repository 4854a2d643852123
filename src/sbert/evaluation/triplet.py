"""Triplet accuracy: the share of triplets whose anchor is closer to the positive (paper Table 4)."""

from __future__ import annotations

import numpy as np

from sbert.data.common import Dataset
from sbert.evaluation.common import Embedder, encode_columns, row_cosine


def evaluate_triplets(model: Embedder, dataset: Dataset, batch_size: int | None = None) -> dict[str, float]:
    """Accuracy (x100) of d(a, p) < d(a, n) for Euclidean, Manhattan and cosine distance."""
    a, p, n = encode_columns(model, [dataset.column(i) for i in range(3)], batch_size)
    distances = {
        "euclidean": lambda x, y: np.linalg.norm(x - y, axis=1),
        "manhattan": lambda x, y: np.abs(x - y).sum(axis=1),
        "cosine": lambda x, y: 1 - row_cosine(x, y),
    }
    scores = {f"{k}_accuracy": 100 * float(np.mean(d(a, p) < d(a, n))) for k, d in distances.items()}
    scores["accuracy"] = scores["euclidean_accuracy"]
    return scores
