"""Text Embeddings Inference's routes: /embed, POST /, /rerank, /similarity's TEI body, /info, /tokenize.

Each is a thin translation onto the same embed, rerank and prompt code as /v1/embeddings and /v1/rerank,
so a vector is the same whichever API asked for it. Errors on these paths take TEI's body,
`{"error": ..., "error_type": ...}` (app.py picks the shape by path).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from sbert.serve import service, token_input
from sbert.serve.routes import Protected, similarity_scores
from sbert.serve.schemas import TeiEmbedRequest, TeiRerankRequest, TeiSimilarityRequest, TeiTokenizeRequest, as_list
from sbert.serve.service import EmbedAsk, prompt_key
from sbert.serve.state import ApiError, FastJSON, ServerState, state
from sbert.version import __version__

tei_router = APIRouter()
# The paths whose errors answer in TEI's shape.
TEI_PATHS = frozenset({"/", "/embed", "/embed_all", "/embed_sparse", "/rerank", "/info", "/tokenize"})


def check_direction(direction: str) -> None:
    """422 for left truncation: inputs are cut at their end here (the text's start is kept)."""
    if direction.lower() == "left":
        raise ApiError(422, "truncation_direction 'Left' is not supported: inputs keep their start", "invalid_request")


@tei_router.post("/embed", dependencies=Protected)
async def embed(body: TeiEmbedRequest, request: Request) -> FastJSON:
    """TEI's /embed: one vector per input (the model's, cut to `dimensions`, unit length when `normalize`)."""
    check_direction(body.truncation_direction)
    st = state(request)
    prompt = prompt_key(st.dense.settings.prompts, prompt_name=body.prompt_name)
    ask = EmbedAsk(as_list(body.inputs), "inputs", prompt, truncate=body.truncate is not False,
                   dimensions=body.dimensions, normalize=body.normalize)  # fmt: skip
    done = await service.embed(st, request, ask)
    return FastJSON(done.rows["float"])  # float32 rows, as the service encodes them


@tei_router.post("/", dependencies=Protected)
async def root(body: TeiEmbedRequest | TeiSimilarityRequest, request: Request) -> FastJSON:
    """The address InferenceClient(model=URL) posts every task to: embeddings, or sentence-similarity scores."""
    if isinstance(body, TeiSimilarityRequest):
        return FastJSON(await similarity_scores(body, request))
    return await embed(body, request)


@tei_router.post("/rerank", dependencies=Protected)
async def tei_rerank(body: TeiRerankRequest, request: Request) -> FastJSON:
    """TEI's /rerank: [{index, score, text?}] best first (sigmoid scores, or logits with raw_scores)."""
    check_direction(body.truncation_direction)
    ranked = await service.rerank(state(request), request, body.query, body.texts,
                                  truncate=body.truncate is not False, raw=body.raw_scores)  # fmt: skip
    return FastJSON([{"index": i, "score": score} | ({"text": body.texts[i]} if body.return_text else {})
                     for i, score in ranked.order])  # fmt: skip


@tei_router.get("/info", dependencies=Protected)
async def info(request: Request) -> FastJSON:
    """What TEI's /info says: the model, its type, its input limit and the batching limits."""
    st = state(request)
    settings = st.settings
    model_type = info_model_type(st)
    return FastJSON({
        "model_id": st.model_id, "model_sha": None, "model_dtype": settings.precision, "model_type": model_type,
        "reranker_id": st.reranker.model_id if st.reranker is not None else None,
        "max_concurrent_requests": settings.max_queue, "max_input_length": st.max_input_length(),
        "max_batch_tokens": st.group_tokens(), "max_batch_requests": None,
        "max_client_batch_size": settings.max_inputs, "auto_truncate": True, "tokenization_workers": 1,
        "version": __version__, "sha": None, "docker_label": None, "int8_calibration": st.calibration_source,
        "token_id_input": token_input.describe(settings.token_ids, st.model_id),
    })  # fmt: skip


def info_model_type(st: ServerState) -> dict[str, Any]:
    """TEI's model_type for the kind --model named; a reranker served beside a dense model rides in reranker_id."""
    if st.model is not None:
        return {"embedding": {"pooling": "+".join(st.model.pooling_modes) or "none"}}
    if st.sparse is not None:
        return {"embedding": {"pooling": "splade"}}
    if st.multivector is not None:  # no pooling: one vector per scored token, as /embed_all gives them
        return {"embedding": {"pooling": "none"}}
    if st.reranker is None:
        raise LookupError(f"/info: no model type for a {st.kind} model")
    labels = st.reranker.model.classifier.auto_model.config.id2label
    return {"reranker": {"id2label": {str(k): v for k, v in labels.items()}}}


@tei_router.post("/tokenize", dependencies=Protected)
async def tokenize(body: TeiTokenizeRequest, request: Request) -> FastJSON:
    """The tokens of each input: id, text, whether it is special, and its character span."""
    st = state(request)
    texts = as_list(body.inputs)
    st.check_limits(texts)
    if body.prompt_name is not None:
        prompt_key(st.dense.settings.prompts, prompt_name=body.prompt_name)  # 422 for a name the model lacks
        texts = st.dense.prompt_plan(prompt_name=body.prompt_name).apply(texts)
    return FastJSON(await run_in_threadpool(token_spans, st.dense, texts, body.add_special_tokens))


def token_spans(model: Any, texts: list[str], special: bool) -> list[list[dict[str, Any]]]:
    """Per text, its tokens as TEI lists them, from the Rust tokenizer's offsets: the tokens the model sees.

    The model's own tokenizer policy (no padding, cut at max_seq_length on its truncation side), not
    tokenizer.json's saved padding and truncation.
    """
    rust = _model_tokenizer(model)
    out = []
    for text, encoding in zip(texts, rust.encode_batch(texts, add_special_tokens=special), strict=True):
        out.append([
            {"id": int(i), "text": text[a:b] if not m else tok, "special": bool(m), "start": int(a), "stop": int(b)}
            for i, tok, m, (a, b) in zip(encoding.ids, encoding.tokens, encoding.special_tokens_mask,
                                         encoding.offsets, strict=True)
        ])  # fmt: skip
    return out


def _model_tokenizer(model: Any) -> Any:
    """The Rust tokenizer as the model tokenizes (the encoder contract's `fast_tokenizer`), or a 422."""
    fast = model.fast_tokenizer()
    if fast is None:
        raise ApiError(422, "this model's tokenizer is a slow (Python) one: it gives no offsets", "no_offsets")
    return fast
