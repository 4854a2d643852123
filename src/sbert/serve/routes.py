"""The HTTP routes, one small function each; they read the shared ServerState from the app."""

from __future__ import annotations

import hashlib
import hmac
from importlib import resources
from typing import Any

import numpy as np
from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from sbert.errors import SbertError
from sbert.formats.image_inputs import is_image_string
from sbert.formats.pdf_pages import page_reference, page_thumbnail
from sbert.search.exact import paraphrase_mining
from sbert.serve import service
from sbert.serve.images import request_items
from sbert.serve.multivector_search import search_multivector
from sbert.serve.scheduler import on_model_thread
from sbert.serve.schemas import (
    EmbeddingsRequest,
    MineRequest,
    RerankRequest,
    SearchRequest,
    SimilarityRequest,
    TeiSimilarityRequest,
    as_list,
)
from sbert.serve.service import EmbedAsk, check_model_name
from sbert.serve.state import ApiError, FastJSON, check_texts, state
from sbert.serve.token_input import input_texts, is_token_input
from sbert.similarity import pairwise_similarity, similarity_of

router = APIRouter()
# Hits per /search request: 2,048 queries x top_k 1,000 turned 42 KB into a 12 MB answer.
MAX_SEARCH_HITS = 20_000


async def require_key(request: Request) -> None:
    """401 unless the request carries the server's API key (Bearer token or X-API-Key).

    A coroutine, though it never waits: FastAPI runs a plain function dependency in its threadpool, a thread
    hop on every request (6% of the event loop's samples under one-text requests).
    """
    key = state(request).settings.api_key
    if key is None:
        return
    header = request.headers.get("authorization", "")
    given = header[7:] if header[:7].lower() == "bearer " else request.headers.get("x-api-key", "")
    # Digests first: compare_digest then runs in the same time whatever the lengths.
    if not hmac.compare_digest(hashlib.sha256(given.encode()).digest(), hashlib.sha256(key.encode()).digest()):
        raise ApiError(401, "invalid or missing API key", "invalid_api_key", {"WWW-Authenticate": "Bearer"})


Protected = [Depends(require_key)]


@router.api_route("/health", methods=["GET", "HEAD"])
async def health(request: Request) -> FastJSON:
    """Liveness and what is loaded."""
    st = state(request)
    index = st.index.info.count if st.index is not None else None
    if st.multivector_index is not None:
        index = st.multivector_index.settings.count
    reranker = st.reranker.model_id if st.reranker is not None else None
    held = st.model or st.sparse or st.multivector
    dimension = held.embedding_dimension if held is not None else None
    return FastJSON({"status": "ok", "model": st.model_id, "kind": st.kind, "dimension": dimension,
                     "backend": st.settings.backend, "index_size": index, "reranker": reranker})  # fmt: skip


@router.get("/v1/models", dependencies=Protected)
async def models(request: Request) -> FastJSON:
    """The one served model, in OpenAI's list shape."""
    return FastJSON(
        {"object": "list", "data": [{"id": state(request).model_id, "object": "model", "owned_by": "sbert"}]}
    )


@router.post("/v1/embeddings", dependencies=Protected)
async def embeddings(body: EmbeddingsRequest, request: Request) -> FastJSON:
    """OpenAI-compatible embeddings; `model` must name the served model (it never names a file to load)."""
    st = state(request)
    check_model_name(body.model, st.model_id)
    if st.model is None and st.multivector is not None:  # token vectors per input (multivector_service.py)
        from sbert.serve.multivector_service import openai_embeddings

        return await openai_embeddings(body, request)
    if body.chunks is not None:
        return await late_chunked(body, request)
    values = body.input if isinstance(body.input, list) else [body.input]
    items = None if is_token_input(body.input) else request_items(values, body.modality)
    texts = [] if items is not None else input_texts(body, st)
    ask = EmbedAsk(texts, prompt=body.input_type, truncate=body.truncate, dimensions=body.dimensions,
                   formats=(body.encoding_format,))  # fmt: skip
    done = await (service.embed(st, request, ask) if items is None else service.embed_items(st, request, ask, items))
    data = [
        {"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(done.rows[body.encoding_format])
    ]
    usage = {"prompt_tokens": done.tokens, "total_tokens": done.tokens}
    answer: dict[str, object] = {"object": "list", "data": data, "model": st.model_id, "usage": usage}
    if done.cut:  # beyond OpenAI's shape; its clients ignore fields they do not know
        answer["truncated"] = done.cut
    return FastJSON(answer)


async def late_chunked(body: EmbeddingsRequest, request: Request) -> FastJSON:
    """`chunks` given: one vector per span of each input, from one pass over the whole input (late chunking).

    Run beside the dynamic batcher (each input is one pass of its own), under the same limits and key.
    """
    st = state(request)
    texts = input_texts(body, st)
    st.check_limits(texts)
    if not hasattr(st.dense, "transformer"):
        raise ApiError(400, "chunks: late chunking needs a transformer model; this one is static", "invalid_chunks")
    spans = [[(a, b) for a, b in row] for row in body.chunks or []]
    task = body.input_type or "document"
    service.check_dimensions(st, body.dimensions)
    try:
        vectors = await on_model_thread(lambda: st.dense.encode_document(texts, chunks=spans, task=task))
    except SbertError as why:
        raise ApiError(400, str(why), "invalid_chunks") from why
    # The chunks' vectors shaped as any route's rows (dimensions, encoding_format: service.shaped_rows).
    flat = np.concatenate([np.asarray(rows, dtype=np.float32).reshape(-1, vectors[0].shape[-1]) for rows in vectors])
    ask = EmbedAsk(texts, dimensions=body.dimensions, formats=(body.encoding_format,))
    shaped = iter(service.shaped_rows(st, flat, ask)[body.encoding_format])
    data = [{"object": "embedding", "index": i, "span": list(span), "embedding": next(shaped)}
            for i, text_spans in enumerate(spans) for span in text_spans]  # fmt: skip
    tokens = sum(st.count_tokens(texts, task)[0])
    return FastJSON({"object": "list", "data": data, "model": st.model_id,
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})  # fmt: skip


@router.post("/v1/rerank", dependencies=Protected)
async def rerank(body: RerankRequest, request: Request) -> FastJSON:
    """The documents ordered by the cross-encoder's score for the query: results with index and relevance_score."""
    ranked = await service.rerank(state(request), request, body.query, body.documents, model=body.model,
                                  top_n=body.top_n)  # fmt: skip
    results = [{"index": i, "relevance_score": score}
               | ({"document": _document(body.documents[i])} if body.return_documents else {})
               for i, score in ranked.order]  # fmt: skip
    return FastJSON({"model": ranked.model_id, "results": results, "usage": {"total_tokens": ranked.tokens}})


def _document(value: str | dict[Any, str]) -> dict[str, str]:
    """A document as a rerank answer returns it: `{"text": ...}`, or the object the client sent (an image)."""
    return {"text": value} if isinstance(value, str) else dict(value)


@router.post("/similarity", dependencies=Protected)
async def similarity(body: SimilarityRequest | TeiSimilarityRequest, request: Request) -> FastJSON:
    """The model's similarity (its similarity_fn_name, cosine by default) of each [a, b] pair, and which it used.

    TEI's body (`inputs`: a source sentence against several) answers TEI's list of scores.
    """
    if isinstance(body, TeiSimilarityRequest):
        return FastJSON(await similarity_scores(body, request))
    st = state(request)
    for p, pair in enumerate(body.pairs):  # errors name the pair and its side, pairs[p][0 or 1]
        check_texts(pair, f"pairs[{p}]")
    vectors, tokens, _ = await st.embed([t for pair in body.pairs for t in pair], request, "pairs")
    name = similarity_of(st.dense)
    scores = pairwise_similarity(vectors[0::2], vectors[1::2], name)
    return FastJSON({"scores": scores.astype(float).tolist(), "similarity_fn_name": name,
                     "usage": {"prompt_tokens": tokens}})  # fmt: skip


async def similarity_scores(body: TeiSimilarityRequest, request: Request) -> list[float]:
    """TEI's /similarity: the similarity of the source sentence with each sentence (serve/tei.py uses it too)."""
    texts = [body.inputs.source_sentence, *body.inputs.sentences]
    vectors, _, _ = await state(request).embed(texts, request, "inputs")
    others = vectors[1:]
    source = np.repeat(vectors[:1], len(others), axis=0)
    return pairwise_similarity(source, others, similarity_of(state(request).dense)).astype(float).tolist()


@router.post("/search", dependencies=Protected)
async def search(body: SearchRequest, request: Request) -> FastJSON:
    """Top-k hits (id, score, text) of the loaded index for each query."""
    st = state(request)
    if st.index is None and st.multivector_index is None:
        raise ApiError(404, "no index loaded; start the server with --index DIR", "no_index")
    queries = as_list(body.query)
    if len(queries) * body.top_k > MAX_SEARCH_HITS:
        raise ApiError(413, f"{len(queries)} queries x top_k {body.top_k} is over {MAX_SEARCH_HITS:,} hits; "
                       "send fewer queries or a smaller top_k", "too_many_hits")  # fmt: skip
    if st.index is None:  # a multi-vector model's own index: MaxSim (serve/multivector_search.py)
        if body.mode != "dense":
            raise ApiError(422, "a multi-vector index ranks by MaxSim: send mode 'dense' (the default)", "invalid_mode")
        pages = await search_multivector(st, queries, body.top_k)
        return FastJSON({"results": [{"query": q, "hits": h} for q, h in zip(queries, pages, strict=True)]})
    index = st.index
    if body.mode != "dense":  # sparse postings beside the index (serve/sparse_routes.py)
        from sbert.serve.sparse_search import sparse_search

        found = await sparse_search(st, body, queries, request)
        return FastJSON({"results": [{"query": q, "hits": [h.__dict__ for h in row]}
                                     for q, row in zip(queries, found, strict=True)]})  # fmt: skip
    vectors, _, _ = await st.embed(queries, request, "query", kind="query")

    def lookup() -> list[list[dict[str, object]]]:
        with st.index_lock:
            return [[h.__dict__ for h in hits] for hits in index.search(vectors, body.top_k)]

    hits = await run_in_threadpool(lookup)
    return FastJSON({"results": [{"query": q, "hits": h} for q, h in zip(queries, hits, strict=True)]})


@router.post("/mine", dependencies=Protected)
async def mine(body: MineRequest, request: Request) -> FastJSON:
    """The most similar pairs among the given sentences, best first."""
    vectors, _, _ = await state(request).embed(body.sentences, request, "sentences")
    pairs = paraphrase_mining(vectors, top_k=min(body.top_k, 100), max_pairs=body.top_k)
    return FastJSON({"pairs": [{"score": s, "i": i, "j": j, "a": body.sentences[i], "b": body.sentences[j]}
                               for s, i, j in pairs]})  # fmt: skip


@router.get("/metrics", dependencies=Protected)
async def metrics(request: Request) -> Response:
    """Prometheus text exposition."""
    return Response(state(request).metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")


@router.get("/image/{doc_id}", dependencies=Protected)
async def indexed_image(doc_id: int, request: Request) -> Response:
    """The image file an index entry names (an image index's documents are paths): the page shows hits by it.

    Only paths the loaded index holds are served, never one a request names, and only from an index whose
    documents the model embedded as images (index.json `documents`): a text index's line that happens to
    name an existing image file is text, not a file to serve.
    """
    st = state(request)
    if st.index is not None:
        texts_of, documents = st.index.texts, st.index.info.documents
    elif st.multivector_index is not None:
        texts_of, documents = st.multivector_index.texts, st.multivector_index.settings.documents
    else:
        raise ApiError(404, "no index loaded; start the server with --index DIR", "no_index")
    if documents != "image":
        raise ApiError(404, "the loaded index holds texts, not image files (an index built before sbert recorded "
                       "its documents' kind: rebuild it to serve its images)", "not_found")  # fmt: skip
    with st.index_lock:
        path = texts_of([doc_id]).get(doc_id)
    if path is None or not is_image_string(path) or path.startswith(("data:", "http://", "https://")):
        raise ApiError(404, f"document {doc_id} is not an indexed image file", "not_found")
    page = page_reference(path)
    if page is not None:  # a PDF page: rendered as a thumbnail (off the event loop)
        return Response(await run_in_threadpool(page_thumbnail, *page), media_type="image/png")
    return FileResponse(path)


@router.get("/", response_class=HTMLResponse)
async def page() -> HTMLResponse:
    """The search page."""
    return HTMLResponse(resources.files("sbert.serve").joinpath("page.html").read_text(encoding="utf-8"))
