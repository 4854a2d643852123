"""Retrieve, then rerank: the bi-encoder's top hits reordered by a cross-encoder.

Cosine search over sentence vectors is fast and coarse; a cross-encoder reads query and
document together, too slow for a corpus and the most accurate way to order a short list.
`rerank_top` hits per query (100 by default, as retrieval systems do) are scored in one
`predict` call, so pairs from every query share the token-budget batches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from sbert.similarity import rank_order

if TYPE_CHECKING:
    from sbert.reranker.model import CrossEncoder

RERANK_TOP = 100
TextsFor = Callable[[Sequence[int]], Sequence[str]]  # corpus rows -> their texts


def check_rerank_top(rerank_top: int, top_k: int) -> None:
    """rerank_top must be a positive count no smaller than top_k (only reranked hits are returned)."""
    if not isinstance(rerank_top, int) or rerank_top < top_k:
        raise ValueError(f"rerank_top must be an integer >= top_k ({top_k}), got {rerank_top!r}")


def rerank_rows(
    reranker: CrossEncoder,
    query_texts: Sequence[str],
    rows: np.ndarray,
    texts_for: TextsFor,
    top_k: int,
    batch_size: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Cross-encoder scores and corpus rows, (q, k) each, best first, of each query's candidate rows.

    rows: (q, n) candidate corpus rows per query, -1 for none (a corpus smaller than n).
    Ties keep the candidates' retrieval order.
    """
    if len(query_texts) != len(rows):
        raise ValueError(f"{len(query_texts)} query texts for {len(rows)} rows of hits")
    flat = [(q, int(r)) for q, row in enumerate(rows) for r in row if r >= 0]
    texts = texts_for([r for _, r in flat])
    scores = reranker.predict([(query_texts[q], t) for (q, _), t in zip(flat, texts, strict=True)],
                              batch_size=batch_size) if flat else np.zeros(0, np.float32)  # fmt: skip
    k = min(top_k, rows.shape[1])
    out_scores = np.full((len(rows), k), -np.inf, dtype=np.float32)
    out_rows = np.full((len(rows), k), -1, dtype=np.int64)
    start = 0
    for q, row in enumerate(rows):
        n = int((row >= 0).sum())
        mine = scores[start : start + n]
        best = rank_order(mine, k)
        out_scores[q, : len(best)], out_rows[q, : len(best)] = mine[best], row[row >= 0][best]
        start += n
    return out_scores, out_rows
