"""Cohere's routes: /v2/embed, /v1/embed and /v2/rerank (/v1/rerank is routes.py's), as its SDKs call them.

Thin translations onto the embed, prompt, quantize and rerank code the OpenAI routes use: `input_type`
search_query / search_document are the model's query / document prompts (the one prompt policy);
classification / clustering use the model's prompt of that name when it has one, else none.
`embedding_types` int8 / uint8 use the server's calibration ranges, as `encoding_format` does.
"""

from __future__ import annotations

import uuid

import numpy as np
from fastapi import APIRouter, Request

from sbert.serve.routes import Protected, encode_rows
from sbert.serve.schemas import CohereEmbedRequest, CohereRerankRequest
from sbert.serve.state import ApiError, FastJSON, by_name, state
from sbert.similarity import similarity_of, unit_rows

cohere_router = APIRouter()
# The paths whose errors answer in Cohere's body (app.py picks the shape by path).
COHERE_PATHS = frozenset({"/v1/embed", "/v2/embed", "/v2/rerank"})
TASKS = {"search_query": "query", "search_document": "document"}


def prompt_kind(request: Request, input_type: str | None) -> str | None:
    """The prompt key for Cohere's input_type."""
    if input_type is None or input_type in TASKS:
        return TASKS.get(input_type or "")
    return by_name(input_type) if input_type in state(request).dense.settings.prompts else None


async def embed_types(body: CohereEmbedRequest, request: Request) -> tuple[dict[str, list[object]], int]:
    """Each requested embedding type's rows, and the request's token count."""
    if body.images or body.inputs or not body.texts:
        raise ApiError(422, "only `texts` are embedded here (no images or mixed `inputs`)", "invalid_request")
    if body.truncate == "START":
        raise ApiError(422, "truncate 'START' is not supported: inputs keep their start (use END or NONE)",
                       "invalid_request")  # fmt: skip
    st = state(request)
    dim = st.dense.embedding_dimension
    if body.output_dimension is not None and body.output_dimension > dim:
        raise ApiError(422, f"output_dimension={body.output_dimension} exceeds the model's {dim}", "invalid_dimensions")
    truncate, kind = body.truncate == "END", prompt_kind(request, body.input_type)
    vectors, tokens, _ = await st.embed(body.texts, request, "texts", truncate=truncate, kind=kind)
    if body.output_dimension is not None:  # leading dimensions, unit length again (as /v1/embeddings' dimensions)
        vectors = unit_rows(vectors[:, : body.output_dimension])
    similarity = similarity_of(st.dense)
    types = body.embedding_types or ["float"]
    # NumPy rows go to orjson as they are, as on /v1/embeddings: Python floats from .tolist() cost a
    # conversion and print float32 values with float64's 17 digits (0.94x /v1/embeddings' rate measured).
    return {t: encode_rows(vectors, t, st.ranges, dim, similarity) for t in dict.fromkeys(types)}, tokens


def meta(tokens: int, version: str) -> dict[str, object]:
    """Cohere's `meta`: the API version and the billed input tokens."""
    return {"api_version": {"version": version}, "billed_units": {"input_tokens": tokens}}


@cohere_router.post("/v2/embed", dependencies=Protected)
async def embed_v2(body: CohereEmbedRequest, request: Request) -> FastJSON:
    """ClientV2.embed: embeddings by type."""
    embeddings, tokens = await embed_types(body, request)
    return FastJSON({"id": str(uuid.uuid4()), "response_type": "embeddings_by_type", "embeddings": embeddings,
                     "texts": body.texts, "meta": meta(tokens, "2")})  # fmt: skip


@cohere_router.post("/v1/embed", dependencies=Protected)
async def embed_v1(body: CohereEmbedRequest, request: Request) -> FastJSON:
    """Client.embed: floats when no embedding_types are asked, else embeddings by type."""
    embeddings, tokens = await embed_types(body, request)
    answer: dict[str, object] = {"id": str(uuid.uuid4()), "texts": body.texts, "meta": meta(tokens, "1")}
    if body.embedding_types is None:
        return FastJSON(answer | {"response_type": "embeddings_floats", "embeddings": embeddings["float"]})
    return FastJSON(answer | {"response_type": "embeddings_by_type", "embeddings": embeddings})


@cohere_router.post("/v2/rerank", dependencies=Protected)
async def rerank_v2(body: CohereRerankRequest, request: Request) -> FastJSON:
    """ClientV2.rerank: results (index, relevance_score) best first, top_n of them."""
    st = state(request)
    served = st.reranker
    if served is None:
        raise ApiError(404, "no reranker loaded; start the server with --reranker DIR", "no_reranker")
    if body.model is not None and body.model != served.model_id:
        raise ApiError(404, f"model {body.model!r} is not served here; use {served.model_id!r}", "model_not_found")
    scores, tokens = await served.scores(st, body.query, body.documents, request)
    order = np.argsort(-scores, kind="stable")[: body.top_n or len(scores)]
    results = [{"index": int(i), "relevance_score": float(scores[i])} for i in order]
    return FastJSON({"id": str(uuid.uuid4()), "results": results, "meta": meta(tokens, "2")})
