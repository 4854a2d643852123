"""Exact cosine top-k and paraphrase mining, computed in memory-bounded chunks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from sbert.similarity import check_similarity, scaled_rows, similarity_matrix, unit_rows

if TYPE_CHECKING:
    from sbert.reranker.model import CrossEncoder

_SCORE_BLOCK = 1 << 24


def cos_sim(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity matrix between rows of a (n, d) and rows of b (m, d) -> (n, m)."""
    return similarity_matrix(a, b, "cosine")


def top_k_rows(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-row top-k of a score matrix, sorted descending: (values, column indices)."""
    # scores: (q, c) -> (q, k), (q, k)
    k = min(k, scores.shape[1])
    idx = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(scores, idx, axis=1)
    order = np.argsort(-vals, axis=1, kind="stable")
    return np.take_along_axis(vals, order, axis=1), np.take_along_axis(idx, order, axis=1)


def semantic_search(
    queries: np.ndarray,
    corpus: np.ndarray,
    top_k: int = 10,
    chunk_size: int | None = None,
    *,
    reranker: CrossEncoder | None = None,
    rerank_top: int = 100,
    query_texts: Sequence[str] | None = None,
    corpus_texts: Sequence[str] | None = None,
    score_function: str = "cosine",
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of each query over the corpus: (scores (q, k), indices (q, k)).

    `score_function`: cosine, dot, euclidean or manhattan (sbert/similarity.py; a model's own is
    `similarity_of(model)`). The corpus is scored `chunk_size` rows at a time (default: as many
    as keep the score block near 2^24 floats, 64 MB), so memory stays bounded for any corpus size.
    With a `reranker` (a CrossEncoder), the `rerank_top` best by cosine are scored again by it
    on `query_texts` and `corpus_texts`, and the top-k come back with its scores.
    """
    if top_k <= 0:
        raise ValueError(f"top_k must be positive, got {top_k}")
    if reranker is not None:
        from sbert.search.rerank import check_rerank_top, rerank_rows

        check_rerank_top(rerank_top, top_k)
        if query_texts is None or corpus_texts is None:
            raise ValueError("a reranker reads texts: pass query_texts and corpus_texts")
        if len(query_texts) != len(np.atleast_2d(queries)) or len(corpus_texts) != len(corpus):
            raise ValueError(f"query_texts/corpus_texts must match the {len(np.atleast_2d(queries))} queries "
                             f"and {len(corpus)} corpus rows")  # fmt: skip
        _, rows = semantic_search(queries, corpus, rerank_top, chunk_size, score_function=score_function)
        return rerank_rows(reranker, query_texts, rows, lambda ids: [corpus_texts[i] for i in ids], top_k)
    kind = check_similarity(score_function)
    q = scaled_rows(np.atleast_2d(queries), kind)
    chunk_size = chunk_size or max(1024, _SCORE_BLOCK // max(len(q), 1))
    best = no_hits(len(q))
    queries_t = torch.from_numpy(q)
    for start in range(0, len(corpus), chunk_size):
        block = scaled_rows(corpus[start : start + chunk_size], kind)
        # torch's matmul and topk: half the time of NumPy's matmul and argpartition (3,089 x 50,000 x 384)
        scores = queries_t @ torch.from_numpy(block).T if kind in ("cosine", "dot") else torch.from_numpy(
            similarity_matrix(q, block, kind))  # fmt: skip
        top = scores.topk(min(top_k, block.shape[0]), dim=1)
        best = merge_top_k(best, (top.values.numpy(), top.indices.numpy() + start), top_k)
    return best


def no_hits(queries: int) -> tuple[np.ndarray, np.ndarray]:
    """An empty (scores, indices) result for `queries` queries, to merge chunks into."""
    return np.zeros((queries, 0), dtype=np.float32), np.zeros((queries, 0), dtype=np.int64)


def merge_top_k(
    best: tuple[np.ndarray, np.ndarray], new: tuple[np.ndarray, np.ndarray], top_k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The `top_k` best of two per-query (scores, indices) results, best first: (q, k1) + (q, k2) -> (q, k)."""
    vals, idx = np.concatenate([best[0], new[0]], axis=1), np.concatenate([best[1], new[1]], axis=1)
    if vals.shape[1] == 0:
        return vals, idx
    kept, pick = top_k_rows(vals, top_k)
    return kept, np.take_along_axis(idx, pick, axis=1)


def paraphrase_mining(
    embeddings: np.ndarray,
    top_k: int = 10,
    max_pairs: int = 100,
    chunk_size: int = 2048,
    device: str | None = "cpu",
) -> list[tuple[float, int, int]]:
    """The most similar pairs (score, i, j) with i < j, best first, without an n x n matrix.

    Each row keeps its `top_k` best partners, so memory is chunk_size x n at a time.
    `device` ("cpu", "cuda") runs the scoring and the pair selection in torch there; None runs
    the NumPy version, which walks the candidates in Python (the mine step of
    benchmarks/speed/pair_mining.py: 1.38 s NumPy, 0.57 s torch, 10,000 sentences on 2 cores).
    """
    if device is not None:
        from sbert.search.torch_mining import mine_pairs

        return mine_pairs(embeddings, top_k, max_pairs, chunk_size, device)
    e = unit_rows(embeddings)
    n = len(e)
    candidates: dict[tuple[int, int], float] = {}
    for start in range(0, n, chunk_size):
        scores = e[start : start + chunk_size] @ e.T  # (c, n)
        rows = np.arange(scores.shape[0])
        scores[rows, rows + start] = -np.inf  # a sentence is not its own paraphrase
        if n < 2:
            break
        vals, idx = top_k_rows(scores, min(top_k, n - 1))
        for r, (row_vals, row_idx) in enumerate(zip(vals, idx, strict=True)):
            for v, j in zip(row_vals.tolist(), row_idx.tolist(), strict=True):
                i = start + r
                candidates[(min(i, j), max(i, j))] = v
    ranked = sorted(candidates.items(), key=lambda kv: (-kv[1], kv[0]))[:max_pairs]
    return [(score, i, j) for (i, j), score in ranked]
