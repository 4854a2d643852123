"""Semantic textual similarity: correlation of embedding similarity with gold scores."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import pearsonr, spearmanr

if TYPE_CHECKING:
    from sbert.reranker.model import CrossEncoder

from sbert.data.common import Dataset
from sbert.evaluation.common import Embedder, encode_columns
from sbert.similarity import pairwise_similarity


def similarity_scores(u: np.ndarray, v: np.ndarray) -> dict[str, np.ndarray]:
    """Pairwise similarities the paper compares: cosine, negative Manhattan / Euclidean, dot product."""
    return {name: pairwise_similarity(u, v, name) for name in ("cosine", "manhattan", "euclidean", "dot")}


def evaluate_sts(
    model: Embedder,
    dataset: Dataset,
    batch_size: int | None = None,
    backend: str = "torch",
    show_progress: bool | None = None,
) -> dict[str, float]:
    """Spearman (headline, of cosine) and Pearson, x100, for every similarity function."""
    return sts_scores(model, dataset, batch_size, backend, show_progress)[0]


def sts_scores(
    model: Embedder,
    dataset: Dataset,
    batch_size: int | None = None,
    backend: str = "torch",
    show_progress: bool | None = None,
) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    """The scores, with the cosine and gold arrays (for scatter plots)."""
    u, v = encode_columns(model, [dataset.column(0), dataset.column(1)], batch_size, backend, show_progress)
    gold = np.asarray(dataset.labels, dtype=np.float64)
    scores: dict[str, float] = {}
    sims = similarity_scores(u, v)
    for name, values in sims.items():
        for metric, value in correlations(values, gold).items():
            scores[f"{name}_{metric}"] = value
    scores["spearman"], scores["pearson"] = scores["cosine_spearman"], scores["cosine_pearson"]
    return scores, sims["cosine"], gold


def correlations(predicted: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Spearman and Pearson (x100) of predicted similarities against gold scores."""
    return {"spearman": 100 * float(spearmanr(predicted, gold).statistic),
            "pearson": 100 * float(pearsonr(predicted, gold).statistic)}  # fmt: skip


def cross_scores(model: CrossEncoder, dataset: Dataset) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    """Spearman and Pearson (x100) of a cross-encoder's pair scores against gold."""
    predicted = model.predict([(t[0], t[1]) for t in dataset.texts]).astype(np.float64)
    gold = np.asarray(dataset.labels, dtype=np.float64)
    return correlations(predicted, gold), predicted, gold
