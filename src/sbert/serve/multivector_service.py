"""A multi-vector (ColBERT) server's work: batched token vectors for /embed_all and /v1/embeddings.

- POST /embed_all (TEI): `[[token vector, ...], ...]`, one matrix per input. An extension field
  `input_type` ("query" | "document", default "document") picks the query rules (length,
  [MASK] expansion) or the document rules (skiplist); `prompt_name` names a saved prompt.
- POST /v1/embeddings with such a model (routes.py hands it here): each `data[i].embedding` is
  the input's list of token vectors and `object` is "multi_vector_embedding" (an extension of
  OpenAI's shape; `input_type` as above; no `dimensions`). With `encoding_format` "base64" (the
  OpenAI SDK's default) it is the row-major float32 matrix, base64-encoded: the SDK decodes it to
  a flat list, to be reshaped by the model's dimension (/health).
A server of another kind answers 424 on /embed_all, as TEI does. Concurrent requests share encode
groups through a dynamic batcher of their own (one group on the model at a time).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from fastapi import Request

from sbert.multivector.pages import is_page_model
from sbert.serve.metrics import Metrics
from sbert.serve.page_service import page_tokens
from sbert.serve.scheduler import CPU_GROUP_TOKENS, DynamicBatcher
from sbert.serve.schemas import EmbeddingsRequest
from sbert.serve.service import prompt_key
from sbert.serve.settings import ServeSettings
from sbert.serve.state import ApiError, FastJSON, ServerState, check_texts, counted, queued, state, too_long
from sbert.serve.token_input import input_texts

if TYPE_CHECKING:
    from sbert.multivector import MultiVectorEncoder

Key = tuple[str, str | None]  # (task, prompt name)


def encode_keyed(model: MultiVectorEncoder, items: Sequence[tuple[Key, list[int]]]) -> list[np.ndarray]:
    """Token matrices of (key, token ids) items in input order: one call per (task, prompt name).

    The ids are those each request was counted with (`token_rows`): no text is tokenized twice.
    """
    out: list[np.ndarray] = [np.zeros((0, 0), np.float32)] * len(items)
    for key in dict.fromkeys(k for k, _ in items):
        rows = [i for i, (k, _) in enumerate(items) if k == key]
        task, prompt_name = key
        matrices = model.encode_token_rows([items[i][1] for i in rows], task, prompt_name)
        for i, matrix in zip(rows, matrices, strict=True):
            out[i] = matrix
    return out


def multivector_batcher(settings: ServeSettings, model: MultiVectorEncoder, metrics: Metrics) -> DynamicBatcher:
    """The batcher behind these routes (the dense routes' limits and group budget)."""
    budget = settings.max_batch_tokens or CPU_GROUP_TOKENS
    return DynamicBatcher(lambda items: encode_keyed(model, items), metrics, budget, settings.max_wait_ms,
                          settings.max_queue, join=lambda parts: [m for part in parts for m in part])  # fmt: skip


async def embed_tokens(st: ServerState, texts: list[str], request: Request, field: str, key: Key,
                       truncate: bool = True) -> tuple[list[np.ndarray], int]:  # fmt: skip
    """Token matrices for `texts` and their token count, with the dense routes' checks and errors."""
    model, batcher = st.multivector, st.multivector_batcher
    if model is None or batcher is None:
        raise ApiError(424, "this server runs no multi-vector model (serve a ColBERT model with --model)",
                       "model_not_multi_vector")  # fmt: skip
    prompt_key(model.settings.prompts, prompt_name=key[1])  # 422 for a prompt name the model lacks
    if is_page_model(model.transformer):  # ColPali-class: its processor renders the inputs (serve/page_service.py)
        return await page_tokens(st, model, texts, field)
    st.check_limits(texts)
    check_texts(texts, field)
    rows, cut = await counted(model.token_rows, texts, key[0], key[1])
    if cut and not truncate:
        raise too_long(field, cut, model._rules.limit(key[0], model.transformer))
    lengths = [len(row) for row in rows]
    st.check_request_tokens(lengths, "split the request")
    return await queued(batcher, [(key, row) for row in rows], lengths, request), sum(lengths)


async def openai_embeddings(body: EmbeddingsRequest, request: Request) -> FastJSON:
    """/v1/embeddings for a multi-vector model: token vectors per input (see the module docstring)."""
    if body.encoding_format not in ("float", "base64") or body.dimensions is not None:
        raise ApiError(422, "a multi-vector model returns float token vectors: encoding_format 'float' or "
                       "'base64', and no dimensions", "invalid_request")  # fmt: skip
    st = state(request)
    key = (body.input_type or "document", None)
    mats, tokens = await embed_tokens(st, input_texts(body, st), request, "input", key, body.truncate)
    rows: list[Any] = mats
    if body.encoding_format == "base64":
        rows = [base64.b64encode(np.ascontiguousarray(m, dtype="<f4").tobytes()).decode("ascii") for m in mats]
    data: list[dict[str, Any]] = [{"object": "multi_vector_embedding", "index": i, "embedding": row}
                                  for i, row in enumerate(rows)]  # fmt: skip
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return FastJSON({"object": "list", "data": data, "model": st.model_id, "usage": usage})
