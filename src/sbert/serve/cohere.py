"""Cohere's routes: /v2/embed, /v1/embed and /v2/rerank (/v1/rerank is routes.py's), as its SDKs call them.

Thin translations onto the embed, prompt, quantize and rerank code the OpenAI routes use: `input_type`
search_query / search_document are the model's query / document prompts (the one prompt policy);
classification / clustering use the model's prompt of that name when it has one, else none.
`embedding_types` int8 / uint8 use the server's calibration ranges, as `encoding_format` does.
"""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request

from sbert.serve.routes import Protected
from sbert.serve.schemas import CohereEmbedRequest, CohereRerankRequest
from sbert.serve.service import EmbedAsk, check_model_name, embed, embed_items, prompt_key, rerank
from sbert.serve.state import ApiError, FastJSON, ServerState, state

cohere_router = APIRouter()
# The paths whose errors answer in Cohere's body (app.py picks the shape by path).
COHERE_PATHS = frozenset({"/v1/embed", "/v2/embed", "/v2/rerank"})
TASKS = {"search_query": "query", "search_document": "document"}


def prompt_for(st: ServerState, input_type: str | None) -> str | None:
    """The prompt key for Cohere's input_type: search_* are the query / document tasks, others a prompt by name."""
    if input_type is None or input_type in TASKS:
        return TASKS.get(input_type or "")
    return prompt_key(st.dense.settings.prompts, prompt_name=input_type, strict=False)


async def embed_types(body: CohereEmbedRequest, request: Request) -> tuple[dict[str, list[object]], int]:
    """Each requested embedding type's rows, and the request's token count."""
    if body.inputs or bool(body.images) == bool(body.texts):
        raise ApiError(422, "send `texts` or `images` (mixed `inputs` are not embedded here)", "invalid_request")
    if body.truncate == "START":
        raise ApiError(422, "truncate 'START' is not supported: inputs keep their start (use END or NONE)",
                       "invalid_request")  # fmt: skip
    st = state(request)
    check_model_name(body.model, st.model_id)
    field = "images" if body.images else "texts"
    prompt = None if body.input_type == "image" else prompt_for(st, body.input_type)
    ask = EmbedAsk(body.texts or [], field, prompt, truncate=body.truncate == "END", dimensions=body.output_dimension,
                   formats=tuple(body.embedding_types or ["float"]))  # fmt: skip
    if body.images:  # Cohere v2's image embedding: data URLs (serve/images.py)
        done = await embed_items(st, request, ask, [("image", image) for image in body.images])
    else:
        done = await embed(st, request, ask)
    return done.rows, done.tokens


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
    ranked = await rerank(state(request), request, body.query, body.documents, model=body.model, top_n=body.top_n)
    results = [{"index": i, "relevance_score": score} for i, score in ranked.order]
    return FastJSON({"id": str(uuid.uuid4()), "results": results, "meta": meta(ranked.tokens, "2")})
