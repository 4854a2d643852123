"""Similarity functions by the names sentence-transformers stores in `similarity_fn_name`.

    cosine:    a.b / (|a| |b|)
    dot:       a.b
    euclidean: -|a - b|_2   (negated: larger is more similar, as sentence-transformers does)
    manhattan: -|a - b|_1

A model saved with one of them keeps it (config_sentence_transformers.json); `similarity`,
evaluation, search and the server all score with `similarity_matrix` / `pairwise_similarity`.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

import numpy as np

DEFAULT_SIMILARITY = "cosine"
# sentence-transformers' SimilarityFunction values, plus its "dot_product" spelling of "dot".
_ALIASES = {"cosine": "cosine", "dot": "dot", "dot_product": "dot", "euclidean": "euclidean", "manhattan": "manhattan"}
SIMILARITY_NAMES = ("cosine", "dot", "euclidean", "manhattan")


class SimilarityFunction(StrEnum):
    """sentence-transformers' similarity names: the values are sbert's names for them."""

    COSINE = "cosine"
    DOT_PRODUCT = "dot"
    EUCLIDEAN = "euclidean"
    MANHATTAN = "manhattan"
    MAXSIM = "maxsim"
    MEAN_MAXSIM = "meanmaxsim"

    @staticmethod
    def possible_values() -> list[str]:
        """Every accepted name."""
        return [m.value for m in SimilarityFunction]


def check_similarity(name: str | None) -> str:
    """The canonical name of a similarity function (None: cosine); a one-line ValueError when unknown."""
    if name is None:
        return DEFAULT_SIMILARITY
    canonical = _ALIASES.get(str(name).lower()) if isinstance(name, str) else None
    if canonical is None:
        raise ValueError(f"unknown similarity function {name!r}; known: {', '.join(SIMILARITY_NAMES)}")
    return canonical


def check_maxsim_scorer(similarity_fct: object, owner: str) -> None:
    """None or sentence-transformers' `colbert_scores` (MaxSim) pass: sbert scores token matrices by MaxSim only."""
    if similarity_fct is not None and getattr(similarity_fct, "__name__", "") != "colbert_scores":
        from sbert.errors import SbertError

        raise SbertError(f"{owner}: sbert scores by MaxSim (colbert_scores); similarity_fct={similarity_fct!r}")


def rank_order(scores: np.ndarray, top_k: int | None = None) -> np.ndarray:
    """Indices of `scores` (n,), best first, ties in input order; the first `top_k` (None: all).

    The one rerank order: CrossEncoder.rank, retrieve-then-rerank and every server dialect use it.
    """
    order = np.argsort(-np.asarray(scores), kind="stable")
    return order if top_k is None else order[:top_k]


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Each row scaled to unit L2 length (an all-zero row stays zero): float32 (n, d)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def scaled_rows(x: np.ndarray, name: str | None = None) -> np.ndarray:
    """Rows as a similarity function compares them: unit length for cosine, as they are otherwise (float32)."""
    if check_similarity(name) == "cosine":
        return unit_rows(x)
    return np.ascontiguousarray(x, dtype=np.float32)


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return unit_rows(a) @ unit_rows(b).T  # (n, d) x (m, d) -> (n, m)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a @ b.T


def _euclidean(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    from scipy.spatial.distance import cdist  # exact near 0, where |a|^2 + |b|^2 - 2ab cancels

    return -cdist(a, b, "euclidean")


def _manhattan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    from scipy.spatial.distance import cdist  # no (n, m, d) intermediate

    return -cdist(a, b, "cityblock")


_MATRIX: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "cosine": _cosine, "dot": _dot, "euclidean": _euclidean, "manhattan": _manhattan,
}  # fmt: skip


def similarity_matrix(a: np.ndarray, b: np.ndarray, name: str | None = None) -> np.ndarray:
    """float32 (n, m): the similarity of every row of `a` (n, d) with every row of `b` (m, d)."""
    x = np.atleast_2d(np.asarray(a, dtype=np.float32))
    y = np.atleast_2d(np.asarray(b, dtype=np.float32))
    return _MATRIX[check_similarity(name)](x, y).astype(np.float32)


def similarity_of(model: object) -> str:
    """The similarity function a model (SentenceEncoder, StaticEncoder or any embedder) scores with.

    A multi-vector model's is maxsim or meanmaxsim (vectors/maxsim.py).
    """
    from sbert.vectors.maxsim import MULTI_VECTOR_SIMILARITIES

    name = getattr(getattr(model, "settings", None), "similarity_fn_name", None)
    return str(name) if name in MULTI_VECTOR_SIMILARITIES else check_similarity(name)


def pairwise_similarity(a: np.ndarray, b: np.ndarray, name: str | None = None) -> np.ndarray:
    """float32 (n,): the similarity of row i of `a` with row i of `b`."""
    x = np.atleast_2d(np.asarray(a, dtype=np.float32))
    y = np.atleast_2d(np.asarray(b, dtype=np.float32))
    if x.shape != y.shape:
        raise ValueError(f"pairwise similarity needs equal shapes, got {x.shape} and {y.shape}")
    kind = check_similarity(name)
    if kind == "cosine":
        return (unit_rows(x) * unit_rows(y)).sum(1)
    if kind == "dot":
        return (x * y).sum(1)
    if kind == "euclidean":
        return -np.linalg.norm(x - y, axis=1).astype(np.float32)
    return -np.abs(x - y).sum(1).astype(np.float32)
