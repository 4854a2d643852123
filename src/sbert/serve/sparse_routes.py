"""TEI's POST /embed_sparse: SPLADE vectors as `[[{"index", "value"}, ...], ...]`, from `--sparse-model`.

A server started without a sparse model answers 424, as TEI does for a model that is not SPLADE.
The encode runs in a worker thread, one request at a time (no dynamic batching for sparse yet).
"""

from __future__ import annotations

from typing import Any

import scipy.sparse
from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from sbert.serve.routes import Protected
from sbert.serve.schemas import TeiSparseRequest, as_list
from sbert.serve.sparse_search import ONE_AT_A_TIME
from sbert.serve.state import ApiError, FastJSON, check_texts, state, too_long
from sbert.serve.tei import check_direction, check_prompt_name

sparse_router = APIRouter()


def sparse_rows(vectors: scipy.sparse.csr_matrix) -> list[list[dict[str, Any]]]:
    """Each row's non-zero weights as TEI writes them: {"index": token id, "value": weight}, by index."""
    from sbert.sparse.export import csr_rows

    return [[{"index": j, "value": v} for j, v in zip(indices, values, strict=True)]
            for indices, values in csr_rows(vectors)]  # fmt: skip


@sparse_router.post("/embed_sparse", dependencies=Protected)
async def embed_sparse(body: TeiSparseRequest, request: Request) -> FastJSON:
    """SPLADE vectors of `inputs` (truncated unless `truncate` is false, then 413 for an input over the limit)."""
    check_direction(body.truncation_direction)
    st = state(request)
    model = st.sparse
    if model is None:
        raise ApiError(424, "this server runs no sparse model (start it with --sparse-model)", "model_not_sparse")
    texts = as_list(body.inputs)
    st.check_limits(texts)
    check_texts(texts, "inputs")
    check_prompt_name(model.settings.prompts, body.prompt_name)
    if body.truncate is False:
        cut, limit = await run_in_threadpool(model.truncated, texts)
        if cut:
            raise too_long("inputs", cut, limit)

    def encode() -> scipy.sparse.csr_matrix:
        with ONE_AT_A_TIME:
            return model.encode(texts, prompt_name=body.prompt_name)

    return FastJSON(sparse_rows(await run_in_threadpool(encode)))
