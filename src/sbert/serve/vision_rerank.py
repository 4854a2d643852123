"""Reranking with a vision-language reranker: queries and documents that are texts or images (page images).

Jina's rerank shape: `documents` (and `query`) as strings, `{"text": ...}`, `{"image": <data URL>}` or
`{"text", "image"}` objects, and bare image data URLs among the strings (as on /v1/embeddings). Images
are read under the same byte, pixel and count limits as every other route (serve/images.py), then the
pairs are scored by the model's own `media_scores` (what `predict` calls) on the model thread, so a served
score is the library's.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from fastapi.concurrency import run_in_threadpool

from sbert.serve.images import read_item, request_items
from sbert.serve.media_limits import check_count
from sbert.serve.scheduler import on_model_thread
from sbert.serve.state import ServerState, check_texts

RERANK_BATCH = 8  # pairs a forward: a page image is hundreds of tokens

if TYPE_CHECKING:
    from sbert.reranker.model import CrossEncoder


def text_only(values: list[Any]) -> list[str] | None:
    """The values as plain strings when every one is text (`{"text": ...}` unwrapped); None when any is media."""
    if request_items(values, None) is not None:
        return None
    return [v["text"] if isinstance(v, dict) else v for v in values]


async def vision_scores(
    st: ServerState, model: CrossEncoder, query: Any, documents: list[Any], raw: bool = False
) -> tuple[np.ndarray, int]:
    """The score of (query, document) for each document (`raw`: the logit), and the tokens the pairs took."""
    items = request_items([query, *documents], None) or [("text", v) for v in [query, *documents]]
    check_count(sum(kind != "text" for kind, _ in items), st)
    texts = [value for kind, value in items if kind == "text"]
    st.check_limits(texts)
    check_texts(texts, "documents")
    where = ["query", *(f"documents[{i}]" for i in range(len(documents)))]
    read = await run_in_threadpool(lambda: [
        value if kind == "text" else read_item(kind, value, at, st, model.classifier)
        for (kind, value), at in zip(items, where, strict=True)
    ])  # fmt: skip
    pairs = [(read[0], doc) for doc in read[1:]]
    logits, tokens = await on_model_thread(partial(model.media_scores, pairs, RERANK_BATCH))  # the saved prompt
    from sbert.reranker import ACTIVATIONS

    return (logits if raw else ACTIVATIONS[model.activation](logits)), tokens
