"""Assemble a server from settings and a loaded model: index check, warm-up, batcher, app."""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from fastapi import FastAPI

from sbert.backends.base import release_openmp_workers
from sbert.errors import SbertError
from sbert.native import native
from sbert.serve.app import create_app
from sbert.serve.calibration import server_calibration
from sbert.serve.metrics import Metrics
from sbert.serve.scheduler import CPU_GROUP_TOKENS, DynamicBatcher
from sbert.serve.settings import ServeSettings
from sbert.serve.state import Reranking, ServerState, prompt_call

if TYPE_CHECKING:
    import numpy as np

    from sbert.dense.model import SentenceEncoder
    from sbert.m3.views import LexicalView
    from sbert.multivector import MultiVectorEncoder
    from sbert.reranker.model import CrossEncoder
    from sbert.search.index import SearchIndex
    from sbert.search.multivector_index import MultiVectorIndex
    from sbert.search.sparse_side import SparseSearch
    from sbert.sparse import SparseEncoder
    from sbert.static import StaticEncoder

Row = TypeVar("Row")  # one input of a group: a text, or its token ids


def build_server(
    settings: ServeSettings,
    model: SentenceEncoder | StaticEncoder | None,
    model_id: str,
    reranker: CrossEncoder | None = None,
    reranker_id: str = "reranker",
    sparse: SparseEncoder | LexicalView | None = None,
    multivector: MultiVectorEncoder | None = None,
) -> FastAPI:
    """The app for `model` (and `reranker`, `sparse`); backends are built (ONNX exported) before the first request.

    `model` None serves the sparse model or the cross-encoder alone (`sbert serve --model` of that kind);
    the dense routes then answer 404 in one line. BGE-M3 comes as its three views (m3/views.py): `model`,
    `sparse` (its lexical weights) and `multivector`, one set of weights.
    """
    settings.validate()
    # Drop-in objects (sbert.SentenceTransformer, sbert.SparseEncoder, ...) serve as sbert's own classes.
    model, reranker, sparse, multivector = native(model), native(reranker), native(sparse), native(multivector)
    if model is None and sparse is None and reranker is None and multivector is None:
        raise SbertError("nothing to serve: give a dense, sparse, multi-vector or cross-encoder model")
    metrics = Metrics()
    index, batcher, calibration = None, None, None
    if model is not None:
        index = open_index(settings, model)
        batcher = dense_batcher(settings, model, metrics)
        calibration = server_calibration(settings, model)
    elif settings.index is not None and multivector is None:
        raise SbertError("--index needs the dense or multi-vector model that built it as --model")
    served = None if reranker is None else serve_reranker(settings, reranker, reranker_id, metrics)
    if sparse is not None:
        sparse.encode(["warm-up"])
    state = ServerState(
        settings, model, model_id, batcher, metrics, index, reranker=served, calibration=calibration, sparse=sparse
    )
    state.sparse_side = sparse_side(index, sparse)
    if sparse is not None:
        from sbert.serve.sparse_batching import sparse_batcher

        state.sparse_batcher = sparse_batcher(settings, sparse, metrics)
    if multivector is not None:
        from sbert.serve.multivector_service import multivector_batcher

        multivector.encode(["warm-up"])
        state.multivector, state.multivector_batcher = multivector, multivector_batcher(settings, multivector, metrics)
        state.colbert_side = colbert_side(index, multivector)
        if model is None and settings.index is not None:  # the multi-vector model's own index (ColBERT, pages)
            from sbert.serve.multivector_search import open_multivector_index

            state.multivector_index = open_multivector_index(settings.index, multivector)
    # Every model is loaded and warm: from here they run on the model thread (serve/scheduler.py), and this
    # thread's OpenMP workers would only make that thread's sleep between ops.
    release_openmp_workers()
    return create_app(state)


def open_index(settings: ServeSettings, model: SentenceEncoder | StaticEncoder) -> SearchIndex | None:
    """--index, checked to be built by this model with its document prompt."""
    if settings.index is None:
        return None
    from sbert.search.index import SearchIndex

    index = SearchIndex(settings.index)
    index.check_model(model.weights_digest(), model.embedding_dimension)
    index.check_prompt(model.prompt_plan(task="document").text)  # /search embeds queries with the query prompt
    return index


def dense_batcher(settings: ServeSettings, model: SentenceEncoder | StaticEncoder, metrics: Metrics) -> DynamicBatcher:
    """The dense model, warmed up, behind the batcher that groups concurrent requests' texts."""

    def budget_now() -> int:
        return group_budget(model.gpu_batch_tokens(settings.backend, settings.precision))

    def encode(items: list[tuple[str | None, list[int]]]) -> np.ndarray:
        # The token rows the request was counted with (ServerState.embed: prompted and truncated to the
        # model's limit, as embedding servers do by default): its texts are not tokenized a second time.
        vectors = encode_by_task(items, lambda rows, task: model.encode_token_rows(
            rows, *prompt_call(task), backend=settings.backend, precision=settings.precision))  # fmt: skip
        if settings.max_batch_tokens is None:  # follow the engine's budget down after a GPU out-of-memory
            batcher.max_batch_tokens = budget_now()
        return vectors

    model.encode(["warm-up"], backend=settings.backend, precision=settings.precision, show_progress=False)
    gpu_tokens = model.gpu_batch_tokens(settings.backend, settings.precision)  # None on the CPU
    budget = settings.max_batch_tokens or group_budget(gpu_tokens)
    cpu = gpu_tokens is None
    batcher = DynamicBatcher(encode, metrics, budget, settings.max_wait_ms, settings.max_queue,
                             lanes=serving_lanes(settings, cpu),
                             single_thread_tokens=settings.single_thread_tokens if cpu else 0)  # fmt: skip
    return batcher


def serving_lanes(settings: ServeSettings, cpu: bool) -> int:
    """Groups on the model at once: `--lanes` on the CPU; one on a GPU (a group is one packed batch there).

    One lane by default: a lone request of a few hundred tokens then runs cut across every core. More lanes
    (one per core) served 32-text requests from 4 clients 16% faster at 5% less CPU, and one-text
    requests alike (docs/serving.md).
    """
    return settings.lanes if cpu else 1


def sparse_side(index: SearchIndex | None, sparse: SparseEncoder | LexicalView | None) -> SparseSearch | None:
    """The index's sparse postings for /search's sparse and hybrid modes, when --sparse-model wrote them."""
    from sbert.search.sparse_side import has_sparse_side, open_sparse_side

    if index is None or sparse is None or not has_sparse_side(index):
        return None
    return open_sparse_side(index, sparse)


def colbert_side(index: SearchIndex | None, model: MultiVectorEncoder) -> MultiVectorIndex | None:
    """The index's ColBERT side for /search's colbert mode and m3 fusion, when --colbert-model wrote it."""
    from sbert.search.colbert_side import has_colbert_side, open_colbert_side

    if index is None or not has_colbert_side(index):
        return None
    return open_colbert_side(index, model)


def encode_by_task(
    items: list[tuple[str | None, Row]], encode: Callable[[list[Row], str | None], np.ndarray]
) -> np.ndarray:
    """Vectors for (task, input) items in order: one encode call per task, so each gets its own prompt."""
    import numpy as np

    tasks = list(dict.fromkeys(task for task, _ in items))
    if len(tasks) == 1:
        return encode([text for _, text in items], tasks[0])
    out: np.ndarray | None = None
    for task in tasks:
        rows = [i for i, (t, _) in enumerate(items) if t == task]
        vectors = encode([items[i][1] for i in rows], task)
        out = np.empty((len(items), vectors.shape[1]), np.float32) if out is None else out
        out[rows] = vectors
    assert out is not None
    return out


def serve_reranker(settings: ServeSettings, reranker: CrossEncoder, reranker_id: str, metrics: Metrics) -> Reranking:
    """The cross-encoder behind /v1/rerank, warmed up, with a batcher of its own (the same limits)."""
    from sbert.errors import SbertError

    if reranker.num_labels != 1:  # /v1/rerank answers one relevance score per document
        raise SbertError(f"--reranker {reranker_id}: {reranker.num_labels} labels give no single relevance score; "
                         "serve a one-label cross-encoder")  # fmt: skip

    def score(pairs: list[tuple[str, str]]) -> np.ndarray:
        scores = reranker.predict(
            pairs, backend=settings.backend, precision=settings.precision, show_progress=False, activation=False
        )  # logits: each route applies the activation, or not (raw)
        return scores.reshape(len(pairs), 1)

    score([("warm-up", "warm-up")])
    budget = settings.max_batch_tokens or group_budget(reranker.gpu_batch_tokens(settings.backend, settings.precision))
    batcher = DynamicBatcher(score, metrics, budget, settings.max_wait_ms, settings.max_queue)
    return Reranking(reranker, reranker_id, batcher)


def group_budget(gpu_tokens: int | None) -> int:
    """Tokens per merged group of requests: one whole engine batch on a GPU, 8192 on CPU.

    On CPU a group is cut into 512-token batches that run one per core (0.84x offline
    throughput under 64 clients, docs/serving.md); on a GPU the engine's own budget (packed or,
    for MPNet and DistilBERT, padded: `gpu_batch_tokens`) makes each group one batch.
    """
    return gpu_tokens if gpu_tokens is not None else CPU_GROUP_TOKENS


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas for this process (as MALLOC_ARENA_MAX would), unless the variable is set.

    By default glibc gives threads up to 8 arenas per core, and the server has many threads (the
    event loop, the encode thread, Starlette's thread pool for tokenizing). Freed memory stays in
    each arena, so RSS crept under load: 496 -> 928 MB and still rising over four 30 s rounds of
    benchmarks/serve/serve_load.py; with two arenas it levels off near 685 MB over eight 20 s rounds, at
    the same throughput. Returns whether the cap was applied (only on glibc, before threads start).
    """
    return not os.environ.get("MALLOC_ARENA_MAX") and _mallopt(_M_ARENA_MAX, arenas)


# glibc's mallopt parameters (malloc.h), and the sizes set: the most glibc lets a block stay on the heap on a
# 64-bit machine (HEAP_MAX_SIZE / 2), and the free top a heap keeps before memory goes back to the kernel.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
HEAP_BLOCK_BYTES = 32 * 2**20
KEPT_FREE_BYTES = 8 * 2**20


def keep_freed_memory() -> bool:
    """Keep a forward's freed activations in the heap for the next one, unless MALLOC_*_THRESHOLD_ is set.

    glibc maps a block over its mmap threshold afresh and unmaps it when freed, raising the threshold only
    as such blocks come and go; under merged groups of random sizes the batch threads kept faulting their
    activations in again in some runs. Under 32-text requests (benchmarks/serve/serve_profile.py --clients 4
    --per-request 32 prints both), three pairs of runs against the commit before: 3.9 / 6.3 / 5.3 page faults
    and 0.05 / 0.06 / 0.07 ms of system CPU a text, against 10.2 / 0.8 / 9.0 and 0.07 / 0.08 / 0.09: a few
    hundredths of a ms a text, the baseline's faults coming and going from run to run. The memory kept: RSS
    769 MB against 748 after eight 20 s rounds of benchmarks/serve/serve_load.py (64 MB kept free: 813). All on a
    2-core AMD EPYC. Returns whether they were set (only on glibc, before threads start).
    """
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") or os.environ.get("MALLOC_TRIM_THRESHOLD_"):
        return False
    return _mallopt(_M_MMAP_THRESHOLD, HEAP_BLOCK_BYTES) and _mallopt(_M_TRIM_THRESHOLD, KEPT_FREE_BYTES)


def _mallopt(parameter: int, value: int) -> bool:
    """Call mallopt(parameter, value); False where the C library is not glibc (musl, macOS) or refuses it."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(parameter, value))
    except (OSError, AttributeError):  # not glibc: nothing to tune
        return False
