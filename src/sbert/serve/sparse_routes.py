"""TEI's POST /embed_sparse: SPLADE vectors as `[[{"index", "value"}, ...], ...]`, from `--sparse-model`.

A server started without a sparse model answers 424, as TEI does for a model that is not SPLADE.
Concurrent requests share encode groups through the sparse batcher (serve/sparse_batching.py).
"""

from __future__ import annotations

from typing import Any

import scipy.sparse
from fastapi import APIRouter, Request

from sbert.serve.routes import Protected
from sbert.serve.schemas import TeiSparseRequest, as_list
from sbert.serve.service import prompt_key
from sbert.serve.sparse_batching import embed_sparse as encode_sparse
from sbert.serve.state import FastJSON, state
from sbert.serve.tei import check_direction

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
    if st.sparse is not None:
        prompt_key(st.sparse.settings.prompts, prompt_name=body.prompt_name)  # 422 for a name the model lacks
    texts = as_list(body.inputs)
    vectors = await encode_sparse(st, texts, request, "inputs", (None, body.prompt_name), body.truncate is not False)
    return FastJSON(sparse_rows(vectors))
