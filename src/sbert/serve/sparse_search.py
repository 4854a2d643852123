"""/search's sparse and hybrid modes: the index's sparse postings (`--sparse-model`), fused with its dense hits."""

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


async def sparse_search(st: ServerState, body: SearchRequest, queries: list[str], request: Request) -> list[list[Hit]]:
    """/search's sparse and hybrid modes: the index's sparse postings, fused with its dense hits for hybrid."""
    from sbert.search.sparse_side import hybrid_hits, sparse_hits

    index, side, model = st.index, st.sparse_side, st.sparse
    if index is None or side is None or model is None:
        raise ApiError(424, f"mode {body.mode!r} needs an index built with --sparse-model, served with the same "
                       "--sparse-model", "no_sparse_index")  # fmt: skip
    deep = max(body.top_k, 100) if body.mode == "hybrid" else body.top_k  # fusion sees each ranking's top 100

    def locked(search: Callable[..., list[list[Hit]]], *args: Any) -> list[list[Hit]]:
        with st.index_lock:  # the index's SQLite connection serves one thread at a time
            return search(*args)

    encoded = await embed_sparse(st, queries, request, "query", ("query", None))  # the model's query side
    sparse = await run_in_threadpool(locked, sparse_hits, index, side, encoded, deep)
    if body.mode == "sparse":
        return sparse
    vectors, _, _ = await st.embed(queries, request, "query", kind="query")
    dense = await run_in_threadpool(locked, index.search, vectors, deep)
    return await run_in_threadpool(locked, hybrid_hits, index, dense, sparse, body.top_k, body.fusion, body.alpha)
