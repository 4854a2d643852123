"""/search beyond the dense index: its sparse postings, its ColBERT side, and their fusions with its dense hits.

The sides are those `sbert index build` wrote with `--sparse-model` and `--colbert-model`; hybrid fuses by RRF,
the min-max weighted sum, or FlagEmbedding's weighted score ("m3", search/weighted_fusion.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from sbert.serve.schemas import SearchRequest
from sbert.serve.sparse_batching import embed_sparse
from sbert.serve.state import ApiError, ServerState

if TYPE_CHECKING:
    from sbert.search.index import Hit

_QUERY_KEY = ("query", None)  # the models' query side, default prompt


async def sparse_search(st: ServerState, body: SearchRequest, queries: list[str], request: Request) -> list[list[Hit]]:
    """/search's sparse, hybrid and colbert modes: the index's other sides, fused with its dense hits for hybrid."""
    from sbert.search.sparse_side import hybrid_hits, sparse_hits

    index, side, model = st.index, st.sparse_side, st.sparse
    if body.mode == "colbert":
        return await _colbert_search(st, body, queries, request)
    if index is None or side is None or model is None:
        raise ApiError(424, f"mode {body.mode!r} needs an index built with --sparse-model, served with the same "
                       "--sparse-model", "no_sparse_index")  # fmt: skip
    deep = max(body.top_k, 100) if body.mode == "hybrid" else body.top_k  # fusion sees each ranking's top 100
    locked = _locked(st)
    encoded = await embed_sparse(st, queries, request, "query", _QUERY_KEY)
    sparse = await run_in_threadpool(locked, sparse_hits, index, side, encoded, deep)
    if body.mode == "sparse":
        return sparse
    vectors, _, _ = await st.embed(queries, request, "query", kind="query")
    dense = await run_in_threadpool(locked, index.search, vectors, deep)
    if body.fusion != "m3":
        return await run_in_threadpool(locked, hybrid_hits, index, dense, sparse, body.top_k, body.fusion, body.alpha)
    from sbert.search.sparse_index import SparseIndex
    from sbert.search.weighted_fusion import QuerySides, three_way_hits

    if not isinstance(side, SparseIndex):
        raise ApiError(422, "fusion 'm3' scores every candidate on the exact postings; this index's sparse side "
                       "is Seismic's approximate one: use fusion 'rrf' or 'weighted'",
                       "approximate_sparse_side")  # fmt: skip
    colbert = None
    if body.weights[2] > 0:
        colbert = (_served_colbert_side(st), await _colbert_queries(st, queries, request))
    sides = QuerySides(vectors, encoded, side, colbert)
    return await run_in_threadpool(locked, three_way_hits, index, (dense, sparse), sides, body.weights, body.top_k)


async def _colbert_search(st: ServerState, body: SearchRequest, queries: list[str], request: Request
                          ) -> list[list[Hit]]:  # fmt: skip
    """The colbert mode: the ColBERT side's MaxSim ranking (its PLAID candidates, rescored exactly)."""
    from sbert.search.colbert_side import colbert_hits

    side, index = _served_colbert_side(st), st.index
    assert index is not None  # /search answered 404 without one
    tokens = await _colbert_queries(st, queries, request)
    return await run_in_threadpool(_locked(st), colbert_hits, index, side, tokens, body.top_k)


def _locked(st: ServerState) -> Callable[..., list[list[Hit]]]:
    """A search call made under the index's lock: its SQLite connection serves one thread at a time."""

    def call(search: Callable[..., list[list[Hit]]], *args: Any) -> list[list[Hit]]:
        with st.index_lock:
            return search(*args)

    return call


def _served_colbert_side(st: ServerState) -> Any:
    if st.colbert_side is None:
        raise ApiError(424, "this needs an index built with --colbert-model, served with the same model "
                       "(sbert serve --model BGE-M3 --index DIR)", "no_colbert_index")  # fmt: skip
    return st.colbert_side


async def _colbert_queries(st: ServerState, queries: list[str], request: Request) -> Any:
    """The queries' token matrices, packed, through the multi-vector batcher."""
    from sbert.serve.multivector_service import embed_tokens
    from sbert.vectors.maxsim import TokenSets

    matrices, _ = await embed_tokens(st, queries, request, "query", _QUERY_KEY)
    return TokenSets.pack(matrices)
