"""FlagEmbedding's weighted score as a fusion: each candidate scored exactly on every side, the raw scores summed.

    score(d) = sum over sides s of w_s * score_s(q, d) / sum of w_s

With BGE-M3's dense, lexical and ColBERT sides this is `BGEM3FlagModel.compute_score`'s "colbert+sparse+dense"
("sparse+dense" with a ColBERT weight of 0); its default weights are equal, its README uses 0.4, 0.2, 0.4.
The scores are raw, not min-max'd as `hybrid.py`'s weighted fusion: BGE-M3's three outputs are trained to one
scale (Chen et al. 2024, self-knowledge distillation). The candidates are the union of the sides' rankings,
and each is scored on every side (the dense vector read back from the index, the lexical dot product from the
postings, MeanMaxSim from the ColBERT tokens), so a document one ranking missed is not scored 0 by it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sbert.errors import SbertError
from sbert.search.index import Hit, SearchIndex, hit_arrays

if TYPE_CHECKING:
    from sbert.search.multivector_index import MultiVectorIndex
    from sbert.search.sparse_index import SparseIndex
    from sbert.vectors.maxsim import TokenSets

PoolScorer = Callable[[int, np.ndarray], np.ndarray]  # (query number, candidate ids) -> each candidate's score
DEFAULT_WEIGHTS = (1.0, 1.0, 1.0)  # compute_score's default: dense, sparse, ColBERT alike


@dataclass(frozen=True)
class QuerySides:
    """The queries as each side encodes them, with the sides' exact indexes (row q: query q)."""

    dense: np.ndarray  # (q, dim) as the dense model gives them
    sparse: Any  # (q, vocabulary) CSR rows of the sparse model
    sparse_index: SparseIndex  # the exact postings (a Seismic index has no exact per-document score)
    colbert: tuple[MultiVectorIndex, TokenSets] | None = None  # the ColBERT side and the queries' matrices


def check_weights(weights: Sequence[float], sides: int) -> tuple[float, ...]:
    """`weights` as a tuple of `sides` numbers >= 0, not all 0, or a one-line error."""
    values = tuple(float(w) for w in weights)
    if len(values) != sides or any(not np.isfinite(w) or w < 0 for w in values) or sum(values) <= 0:
        raise SbertError(f"weights {list(weights)}: give {sides} finite numbers >= 0 (dense, sparse, ColBERT), "
                         "not all 0")  # fmt: skip
    return values


def candidate_pools(rankings: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per query, the sorted union of the ids in each ranking's row (each ranking (q, k) ids, -1 for none)."""
    if not rankings:
        return []
    out = []
    for q in range(len(rankings[0])):
        ids = np.concatenate([np.asarray(r[q], dtype=np.int64) for r in rankings])
        out.append(np.unique(ids[ids >= 0]))
    return out


def weighted_fuse(
    pools: Sequence[np.ndarray], sides: Sequence[tuple[float, PoolScorer]], top_k: int
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(scores (q, top_k), ids (q, top_k)) best first: each pool's candidates by the weighted mean of raw scores.

    A side of weight 0 is not scored. Ties go to the smaller id; short rows pad with -inf / -1.
    """
    total = sum(weight for weight, _ in sides)
    scores = np.full((len(pools), top_k), -np.inf, dtype=np.float32)
    ids = np.full((len(pools), top_k), -1, dtype=np.int64)
    for q, pool in enumerate(pools):
        if len(pool) == 0:
            continue
        fused = np.zeros(len(pool), dtype=np.float64)
        for weight, score in sides:
            if weight > 0:
                fused += weight * np.asarray(score(q, pool), dtype=np.float64)
        fused /= total
        order = np.lexsort((pool, -fused))[:top_k]  # best first, then the smaller id
        scores[q, : len(order)], ids[q, : len(order)] = fused[order], pool[order]
    return scores, ids


def three_way_hits(
    index: SearchIndex, rankings: Sequence[Sequence[Sequence[Hit]]], queries: QuerySides, weights: Sequence[float],
    top_k: int,
) -> list[list[Hit]]:  # fmt: skip
    """The candidates of `rankings` (per-query Hits of each side searched) by the weighted mean of the sides' scores.

    `queries` holds each side's query encodings and index: the dense vectors (scored against `index`), the sparse
    rows (against the exact postings) and, when its weight is above 0, the ColBERT matrices (against its tokens).
    """
    w_dense, w_sparse, w_colbert = check_weights(weights, 3)
    if w_colbert > 0 and queries.colbert is None:
        raise SbertError(f"{index.folder}: a ColBERT weight of {w_colbert} needs a ColBERT side (build the index "
                         "with --colbert-model) or a weight of 0")  # fmt: skip
    sides: list[tuple[float, PoolScorer]] = [
        (w_dense, lambda q, pool: index.pool_scores(queries.dense[q], pool)),
        (w_sparse, lambda q, pool: queries.sparse_index.pool_scores(queries.sparse[q], pool)),
    ]
    if queries.colbert is not None:
        side, tokens = queries.colbert
        sides.append((w_colbert, lambda q, pool: side.pool_scores(tokens.matrix(q), pool)))
    pools = candidate_pools([hit_arrays(r)[1] for r in rankings])
    texts = {h.id: h.text for ranking in rankings for row in ranking for h in row}
    return index.hits(*weighted_fuse(pools, sides, top_k), texts)
