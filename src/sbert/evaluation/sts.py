"""Semantic textual similarity: correlation of embedding similarity with gold scores."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import pearsonr, spearmanr

from sbert.data.common import Dataset
from sbert.evaluation.common import encode_columns, row_cosine

if TYPE_CHECKING:
    from sbert.model import SentenceEncoder


def similarity_scores(u: np.ndarray, v: np.ndarray) -> dict[str, np.ndarray]:
    """Pairwise similarities the paper compares: cosine, negative Manhattan / Euclidean, dot product."""
    return {
        "cosine": row_cosine(u, v),
        "manhattan": -np.abs(u - v).sum(axis=1),
        "euclidean": -np.linalg.norm(u - v, axis=1),
        "dot": (u * v).sum(axis=1),
    }


def evaluate_sts(
    model: SentenceEncoder, dataset: Dataset, batch_size: int | None = None, backend: str = "torch"
) -> dict[str, float]:
    """Spearman (headline, of cosine) and Pearson, x100, for every similarity function."""
    u, v = encode_columns(model, [dataset.column(0), dataset.column(1)], batch_size, backend)
    gold = np.asarray(dataset.labels, dtype=np.float64)
    scores: dict[str, float] = {}
    for name, sims in similarity_scores(u, v).items():
        scores[f"{name}_spearman"] = 100 * float(spearmanr(sims, gold).statistic)
        scores[f"{name}_pearson"] = 100 * float(pearsonr(sims, gold).statistic)
    scores["spearman"] = scores["cosine_spearman"]
    scores["pearson"] = scores["cosine_pearson"]
    return scores
