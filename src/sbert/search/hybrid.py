"""Hybrid search: one ranking from a dense and a sparse one, by reciprocal-rank fusion or a weighted sum.

    rrf(d)      = sum over rankings r containing d of 1 / (k + rank_r(d))     (Cormack et al., SIGIR 2009; k = 60)
    weighted(d) = alpha * dense'(d) + (1 - alpha) * sparse'(d)                  (x' = min-max over that query's hits)

A document missing from one ranking adds nothing from it (rrf) or 0 (weighted).
"""

from __future__ import annotations

import numpy as np

from sbert.errors import SbertError

METHODS = ("rrf", "weighted")


def _minmax(scores: np.ndarray) -> np.ndarray:
    spread = scores.max() - scores.min() if len(scores) else 0.0
    return (scores - scores.min()) / spread if spread > 0 else np.ones_like(scores)


def fuse_one(
    dense: tuple[np.ndarray, np.ndarray], sparse: tuple[np.ndarray, np.ndarray], top_k: int, method: str,
    alpha: float, rrf_k: int,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """One query's fused (scores, ids), best first; -1 ids (no hit) are ignored."""
    fused: dict[int, float] = {}
    for weight, (scores, ids) in ((alpha, dense), (1 - alpha, sparse)):
        valid = ids >= 0
        scores, ids = scores[valid], ids[valid]
        if method == "rrf":
            contribution = 1.0 / (rrf_k + np.arange(1, len(ids) + 1))
        else:
            contribution = weight * _minmax(scores.astype(np.float64))
        for doc, value in zip(ids.tolist(), contribution.tolist(), strict=True):
            fused[doc] = fused.get(doc, 0.0) + value
    best = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:top_k]
    out_scores = np.full(top_k, -np.inf, dtype=np.float32)
    out_ids = np.full(top_k, -1, dtype=np.int64)
    out_scores[: len(best)] = [s for _, s in best]
    out_ids[: len(best)] = [d for d, _ in best]
    return out_scores, out_ids


def hybrid_fuse(
    dense: tuple[np.ndarray, np.ndarray], sparse: tuple[np.ndarray, np.ndarray], top_k: int = 10,
    method: str = "rrf", alpha: float = 0.5, rrf_k: int = 60,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Fuse per-query (scores (q, k1), ids (q, k1)) dense and (q, k2) sparse results into (q, top_k).

    Each input is ranked best first (as `semantic_search` and `SparseIndex.search` return them).
    """
    if method not in METHODS:
        raise SbertError(f"hybrid method {method!r}: use {' or '.join(METHODS)}")
    if not 0 <= alpha <= 1:
        raise SbertError(f"alpha={alpha}: must be in [0, 1] (the dense ranking's weight)")
    if len(dense[0]) != len(sparse[0]):
        raise SbertError(f"hybrid search needs one dense and one sparse ranking per query "
                         f"(got {len(dense[0])} and {len(sparse[0])})")  # fmt: skip
    rows = [fuse_one((dense[0][i], dense[1][i]), (sparse[0][i], sparse[1][i]), top_k, method, alpha, rrf_k)
            for i in range(len(dense[0]))]  # fmt: skip
    if not rows:
        return np.zeros((0, top_k), dtype=np.float32), np.zeros((0, top_k), dtype=np.int64)
    return np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])
