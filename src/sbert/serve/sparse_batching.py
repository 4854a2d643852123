"""Sparse encodes through a dynamic batcher of their own: /embed_sparse requests and /search's sparse queries.

Concurrent requests' texts merge into token-budget groups exactly as the dense routes' do
(serve/scheduler.py), one group on the model at a time; a group may mix prompts (a TEI prompt_name,
the query side of /search), so it is encoded one prompt at a time and its rows put back in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse
from fastapi import Request

from sbert.serve.metrics import Metrics
from sbert.serve.scheduler import CPU_GROUP_TOKENS, DynamicBatcher
from sbert.serve.settings import ServeSettings
from sbert.serve.state import ApiError, ServerState, check_texts, counted, queued, too_long

if TYPE_CHECKING:
    from sbert.m3.views import LexicalView
    from sbert.sparse import SparseEncoder

Key = tuple[str | None, str | None]  # (task: "query" | "document" | None, prompt name)


def encode_keyed(model: SparseEncoder | LexicalView, items: Sequence[tuple[Key, str]]) -> scipy.sparse.csr_matrix:
    """Sparse vectors of (key, text) items in input order: one encode call per (task, prompt name)."""
    keys = list(dict.fromkeys(key for key, _ in items))
    parts, order = [], []
    for key in keys:
        rows = [i for i, (k, _) in enumerate(items) if k == key]
        task, prompt_name = key
        parts.append(model.encode([items[i][1] for i in rows], task=task, prompt_name=prompt_name))
        order += rows
    stacked = scipy.sparse.vstack(parts, format="csr")
    return stacked if order == sorted(order) else stacked[np.argsort(order)]


def sparse_batcher(settings: ServeSettings, model: SparseEncoder | LexicalView, metrics: Metrics) -> DynamicBatcher:
    """The batcher behind the sparse routes (the dense routes' limits; 8192-token groups unless --max-batch-tokens)."""
    budget = settings.max_batch_tokens or CPU_GROUP_TOKENS
    return DynamicBatcher(lambda items: encode_keyed(model, items), metrics, budget, settings.max_wait_ms,
                          settings.max_queue, join=lambda parts: scipy.sparse.vstack(parts, format="csr"))  # fmt: skip


async def embed_sparse(
    st: ServerState, texts: list[str], request: Request, field: str, key: Key, truncate: bool = True
) -> scipy.sparse.csr_matrix:
    """Sparse vectors for `texts` through the sparse batcher, with the dense routes' checks and errors."""
    model, batcher = st.sparse, st.sparse_batcher
    if model is None or batcher is None:
        raise ApiError(424, "this server runs no sparse model (start it with --sparse-model)", "model_not_sparse")
    st.check_limits(texts)
    check_texts(texts, field)
    lengths, cut = await counted(model.token_lengths, texts, *key)  # with the prompt it gets
    if cut and not truncate:
        raise too_long(field, cut, model.max_seq_length)
    st.check_request_tokens(lengths, "split the request")
    return await queued(batcher, [(key, t) for t in texts], lengths, request)
