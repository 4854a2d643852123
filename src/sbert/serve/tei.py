"""Text Embeddings Inference's routes: /embed, POST /, /rerank, /similarity's TEI body, /info, /tokenize.

Each is a thin translation onto the same embed, rerank and prompt code as /v1/embeddings and /v1/rerank,
so a vector is the same whichever API asked for it. Errors on these paths take TEI's body,
`{"error": ..., "error_type": ...}` (app.py picks the shape by path).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from sbert.serve.routes import Protected, similarity_scores
from sbert.serve.schemas import TeiEmbedRequest, TeiRerankRequest, TeiSimilarityRequest, TeiTokenizeRequest, as_list
from sbert.serve.state import ApiError, FastJSON, ServerState, by_name, state
from sbert.similarity import unit_rows
from sbert.version import __version__

tei_router = APIRouter()
# The paths whose errors answer in TEI's shape.
TEI_PATHS = frozenset({"/", "/embed", "/embed_sparse", "/rerank", "/info", "/tokenize"})


def check_direction(direction: str) -> None:
    """422 for left truncation: inputs are cut at their end here (the text's start is kept)."""
    if direction.lower() == "left":
        raise ApiError(422, "truncation_direction 'Left' is not supported: inputs keep their start", "invalid_request")


def prompt_key(request: Request, prompt_name: str | None) -> str | None:
    """The batch prompt key for TEI's prompt_name (one of the model's prompts), or None."""
    if prompt_name is None:
        return None
    check_prompt_name(state(request).dense.settings.prompts, prompt_name)
    return by_name(prompt_name)


def check_prompt_name(prompts: dict[str, str], prompt_name: str | None) -> None:
    """422 when TEI's prompt_name is not one of the model's prompts."""
    if prompt_name is not None and prompt_name not in prompts:
        known = ", ".join(sorted(prompts)) or "none"
        raise ApiError(
            422, f"prompt_name {prompt_name!r} is not one of the model's prompts ({known})", "invalid_prompt"
        )


async def tei_vectors(body: TeiEmbedRequest, request: Request) -> np.ndarray:
    """The vectors /embed answers: the model's, cut to `dimensions`, unit length when `normalize`."""
    check_direction(body.truncation_direction)
    st = state(request)
    if body.dimensions is not None and body.dimensions > st.dense.embedding_dimension:
        raise ApiError(422, f"dimensions={body.dimensions} exceeds the model's {st.dense.embedding_dimension}",
                       "invalid_dimensions")  # fmt: skip
    kind = prompt_key(request, body.prompt_name)
    truncate = body.truncate is not False
    vectors, _, _ = await st.embed(as_list(body.inputs), request, "inputs", truncate=truncate, kind=kind)
    vectors = vectors[:, : body.dimensions] if body.dimensions else vectors
    return unit_rows(vectors) if body.normalize else vectors


@tei_router.post("/embed", dependencies=Protected)
async def embed(body: TeiEmbedRequest, request: Request) -> FastJSON:
    """TEI's /embed: one vector per input, as a list of lists."""
    return FastJSON(list(np.ascontiguousarray(await tei_vectors(body, request), dtype=np.float32)))


@tei_router.post("/", dependencies=Protected)
async def root(body: TeiEmbedRequest | TeiSimilarityRequest, request: Request) -> FastJSON:
    """The address InferenceClient(model=URL) posts every task to: embeddings, or sentence-similarity scores."""
    if isinstance(body, TeiSimilarityRequest):
        return FastJSON(await similarity_scores(body, request))
    return await embed(body, request)


@tei_router.post("/rerank", dependencies=Protected)
async def rerank(body: TeiRerankRequest, request: Request) -> FastJSON:
    """TEI's /rerank: [{index, score, text?}] best first (sigmoid scores, or logits with raw_scores)."""
    check_direction(body.truncation_direction)
    served = state(request).reranker
    if served is None:
        raise ApiError(424, "no reranker loaded; start the server with --reranker DIR", "no_reranker")
    scores, _ = await served.scores(state(request), body.query, body.texts, request, raw=body.raw_scores,
                                    truncate=body.truncate is not False)  # fmt: skip
    order = np.argsort(-scores, kind="stable")
    return FastJSON([{"index": int(i), "score": float(scores[i])} | ({"text": body.texts[i]} if body.return_text
                     else {}) for i in order])  # fmt: skip


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
    })  # fmt: skip


def info_model_type(st: ServerState) -> dict[str, Any]:
    """TEI's model_type for the kind --model named; a reranker served beside a dense model rides in reranker_id."""
    if st.model is not None:
        return {"embedding": {"pooling": pooling_name(st.model)}}
    if st.sparse is not None:
        return {"embedding": {"pooling": "splade"}}
    assert st.reranker is not None
    labels = st.reranker.model.classifier.auto_model.config.id2label
    return {"reranker": {"id2label": {str(k): v for k, v in labels.items()}}}


def pooling_name(model: Any) -> str:
    """The Pooling's mode as TEI names it (mean, cls, lasttoken, ...), or "static" for a static table."""
    for module in getattr(model, "chain", lambda: [])():
        modes = getattr(module, "modes", None)
        if modes:
            return "+".join(modes)
    return "static" if not hasattr(model, "chain") else "none"


@tei_router.post("/tokenize", dependencies=Protected)
async def tokenize(body: TeiTokenizeRequest, request: Request) -> FastJSON:
    """The tokens of each input: id, text, whether it is special, and its character span."""
    st = state(request)
    texts = as_list(body.inputs)
    st.check_limits(texts)
    if body.prompt_name is not None:
        prompt_key(request, body.prompt_name)
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
    """The Rust tokenizer as the model tokenizes (a StaticEncoder holds one with no limit)."""
    module = getattr(model, "input_module", None)
    if module is not None:
        fast = module.fast_tokenizer(module.max_seq_length)
        if fast is None:
            raise ApiError(422, "this model's tokenizer is a slow (Python) one: it gives no offsets", "no_offsets")
        return fast
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(model.tokenizer.to_str())
    copy.no_padding()
    copy.no_truncation()
    return copy
