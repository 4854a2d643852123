"""What the routes share: the loaded model, its batcher, the optional index, limits and metrics."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import orjson
from fastapi import HTTPException, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from sbert.serve.metrics import Metrics
from sbert.serve.scheduler import ClientGone, DynamicBatcher, QueueFull
from sbert.serve.settings import ServeSettings

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder
    from sbert.m3.views import LexicalView
    from sbert.modules.classifier import PairClassifier
    from sbert.modules.logit_score import LogitPairScorer
    from sbert.multivector import MultiVectorEncoder
    from sbert.reranker.model import CrossEncoder
    from sbert.search.index import SearchIndex
    from sbert.search.multivector_index import MultiVectorIndex
    from sbert.search.sparse_side import SparseSearch
    from sbert.serve.calibration import Calibration
    from sbert.sparse import SparseEncoder
    from sbert.static import StaticEncoder


class ApiError(HTTPException):
    """An error answered as OpenAI does: {"error": {"message", "type", "code", "param"}}."""

    def __init__(self, status: int, message: str, code: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(status_code=status, detail=message, headers=headers)
        self.code = code


class FastJSON(Response):
    """JSON through orjson: NumPy rows serialize directly (3-10x faster than json for float lists)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        """Serialize `content`."""
        return orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY)


@dataclass
class ServerState:
    """One served model with its batcher; `index` when started with --index."""

    settings: ServeSettings
    model: SentenceEncoder | StaticEncoder | None  # None: a server of a sparse model or a cross-encoder alone
    model_id: str
    batcher: DynamicBatcher | None
    metrics: Metrics
    index: SearchIndex | None = None
    reranker: Reranking | None = None
    calibration: Calibration | None = None  # int8/uint8 ranges, fixed at start-up (serve/calibration.py)
    sparse: SparseEncoder | LexicalView | None = None  # --sparse-model (SPLADE) or BGE-M3's lexical weights
    sparse_side: SparseSearch | None = None  # the index's sparse side, when built by --sparse-model's weights
    colbert_side: MultiVectorIndex | None = None  # the index's ColBERT side, when built by the served ColBERT weights
    sparse_batcher: DynamicBatcher | None = None  # merges concurrent sparse encodes (serve/sparse_batching.py)
    multivector: MultiVectorEncoder | None = None  # a ColBERT --model: token vectors at /embed_all
    multivector_batcher: DynamicBatcher | None = None
    multivector_index: MultiVectorIndex | None = None  # --index of a multi-vector --model (ColBERT texts, pages)
    # FAISS reads are thread-safe, the index's SQLite connection is not: one search at a time.
    index_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def dense(self) -> SentenceEncoder | StaticEncoder:
        """The dense model, or a 404 saying which kind this server holds and how to serve a dense one."""
        if self.model is None:
            held = "a sparse model" if self.sparse is not None else (
                "a multi-vector model" if self.multivector is not None else "a cross-encoder")  # fmt: skip
            raise ApiError(404, f"this server holds {held} ({self.model_id}), not a dense model: this route needs "
                           "one (sbert serve --model DENSE_MODEL)", "no_dense_model")  # fmt: skip
        return self.model

    @functools.cached_property
    def dense_width(self) -> int:
        """The dense model's vector width, read once (a server never changes its model).

        Reading it walks the module chain: about 8 us, a few % of a one-text request's time on the event loop.
        """
        return int(self.dense.embedding_dimension)

    @property
    def ranges(self) -> np.ndarray | None:
        """The int8/uint8 ranges every request quantizes with."""
        return self.calibration.ranges if self.calibration is not None else None

    @property
    def calibration_source(self) -> dict[str, object] | None:
        """/info's record of the int8/uint8 calibration."""
        return self.calibration.describe() if self.calibration is not None else None

    @property
    def kind(self) -> str:
        """The kind of model --model named: dense (static included), sparse, multi-vector, cross-encoder or m3."""
        if self.model is not None:
            return "m3" if self.multivector is not None else "dense"  # BGE-M3: its dense, lexical and ColBERT views
        if self.multivector is not None:
            return "multi-vector"
        return "sparse" if self.sparse is not None else "cross-encoder"

    def max_input_length(self) -> int | None:
        """The token limit of the model --model named (None for a static model: it has none)."""
        if self.model is not None:
            return self.model.max_seq_length
        if self.sparse is not None:
            return self.sparse.max_seq_length
        if self.multivector is not None:
            return self.multivector.max_seq_length
        assert self.reranker is not None
        return self.reranker.model.max_seq_length

    def group_tokens(self) -> int:
        """The token budget of one merged group on the model --model named."""
        batcher = self.batcher or self.sparse_batcher or self.multivector_batcher or (
            self.reranker.batcher if self.reranker else None)  # fmt: skip
        assert batcher is not None
        return batcher.max_batch_tokens

    def count_tokens(self, texts: Sequence[str], task: str | None = None) -> tuple[list[int], list[int]]:
        """Tokens per text as the model sees them (prompt and special tokens included, truncated), and the cut texts."""
        rows, cut = self.token_rows(texts, task)
        return [len(row) for row in rows], cut

    def token_rows(self, texts: Sequence[str], task: str | None = None) -> tuple[list[list[int]], list[int]]:
        """Token ids per text as the model embeds them for prompt key `task`, and the cut texts."""
        return self.dense.token_rows(texts, *prompt_call(task))

    def check_limits(self, texts: Sequence[str]) -> None:
        """413 when a request carries more texts or characters than the server accepts."""
        if len(texts) > self.settings.max_inputs:
            raise ApiError(413, f"{len(texts)} inputs; the limit is {self.settings.max_inputs}", "too_many_inputs")
        chars = sum(len(t) for t in texts)
        if chars > self.settings.max_chars:
            raise ApiError(413, f"{chars} characters; the limit is {self.settings.max_chars}", "input_too_long")

    async def embed(
        self, texts: list[str], request: Request, field: str = "input", truncate: bool = True, kind: str | None = None
    ) -> tuple[np.ndarray, int, list[int]]:
        """Vectors for `texts` through the dynamic batcher, their token count and the truncated texts.

        A client that hangs up while its texts wait in the queue takes them out of it. With
        `truncate=False` a text over the model's limit is refused instead (as TEI's truncate=false).
        `kind` ("query", "document") picks the model's prompt for it, as encode(task=kind) does (the
        prompt policy of encoding/prompted.py, include_prompt included); `by_name(prompt_name)` one of
        the model's prompts by name (TEI's prompt_name); None its default prompt.
        """
        model = self.dense
        assert self.batcher is not None  # built with the dense model
        self.check_limits(texts)
        check_texts(texts, field)
        rows, cut = await counted(self.token_rows, texts, kind)
        if cut and not truncate:
            raise too_long(field, cut, model.max_seq_length or 0)
        lengths = [len(row) for row in rows]
        tokens = self.check_request_tokens(lengths, "split the request")
        # The counted rows go to the model, not the texts (tokenized once). Groups may mix tasks: the
        # encoder sorts them back by task, each with its prompt's pooling.
        items = [(kind, row) for row in rows]
        return await queued(self.batcher, items, lengths, request), tokens, cut

    def check_request_tokens(self, lengths: Sequence[int], advice: str) -> int:
        """The request's token count, or 413 when it is over --max-request-tokens (`advice` says what to do)."""
        tokens = sum(lengths)
        if tokens > self.settings.max_request_tokens:
            raise ApiError(413, f"{tokens} tokens in one request; the limit is {self.settings.max_request_tokens} "
                           f"(--max-request-tokens): {advice}", "too_many_tokens")  # fmt: skip
        return tokens


# A request this short is tokenized on the event loop: a threadpool hop costs more than its tokenizer call
# (under 16 one-text clients the hop's thread took 3% of the server's CPU, beside 0.1 ms of tokenizing).
INLINE_TOKEN_CHARS = 2048


async def counted(count: Callable[..., tuple[list[Any], list[int]]], texts: Sequence[str], *key: Any) -> Any:
    """`count(texts, *key)`: per text its tokens (a count or the ids) and the cut; off the loop unless short."""
    if sum(len(t) for t in texts) <= INLINE_TOKEN_CHARS:
        return count(texts, *key)
    return await run_in_threadpool(count, texts, *key)


async def queued(batcher: DynamicBatcher, items: list[Any], lengths: list[int], request: Request) -> Any:
    """`batcher.submit` for a route: a client gone while waiting is 499, a full queue 503 (with Retry-After)."""
    try:
        return await batcher.submit(items, lengths, request.is_disconnected)
    except ClientGone as e:  # nobody reads the answer; 499 as nginx logs it, and no traceback
        raise ApiError(499, str(e), "client_closed_request") from None
    except QueueFull as e:
        raise ApiError(503, f"server busy ({e}); retry shortly", "queue_full", {"Retry-After": "1"}) from None


@dataclass
class Reranking:
    """The served cross-encoder (`--reranker`) with its own batcher: pairs from many requests share groups."""

    model: CrossEncoder
    model_id: str
    batcher: DynamicBatcher

    async def scores(
        self, server: ServerState, query: str, documents: list[str], request: Request, raw: bool = False,
        truncate: bool = True,
    ) -> tuple[np.ndarray, int]:  # fmt: skip
        """The score of (query, document) for each document (`raw`: the logit), and the request's token count.

        The same limits as /v1/embeddings: inputs, characters, tokens, empty or invalid texts; with
        `truncate=False` a pair over the model's limit is refused (413) instead of cut.
        """
        server.check_limits([query, *documents])
        check_texts([query], "query")
        check_texts(documents, "documents")
        pairs = [(query, d) for d in documents]
        # A text reranker's scorer: service.rerank sends a reranker that reads images to serve/vision_rerank.py.
        scorer = cast("PairClassifier | LogitPairScorer", self.model.classifier)
        if not truncate:
            cut = await run_in_threadpool(scorer.over_limit, pairs)
            if cut:
                raise too_long("texts", cut, scorer.max_seq_length)
        lengths = [len(row) for row in await run_in_threadpool(scorer.pair_ids, pairs)]
        tokens = server.check_request_tokens(lengths, "send fewer documents")
        logits = (await queued(self.batcher, pairs, lengths, request))[:, 0]
        from sbert.reranker import ACTIVATIONS

        return (logits if raw else ACTIVATIONS[self.model.activation](logits)), tokens


def too_long(field: str, cut: Sequence[int], limit: int) -> ApiError:
    """413 for inputs over the model's token limit when the request said truncate=false (TEI's behaviour)."""
    return ApiError(413, f"{field}[{cut[0]}] and {len(cut) - 1} other(s) exceed the model's {limit} tokens "
                    "and truncate is false", "input_too_long")  # fmt: skip


def check_texts(texts: Sequence[str], field: str) -> None:
    """422 naming the first text that is empty or not valid Unicode (a lone UTF-16 surrogate).

    JSON may carry an escaped lone surrogate (U+D800); Python keeps it in the str, and the tokenizer then fails
    deep inside. OpenAI's API rejects empty strings, so they are refused here too.
    """
    for i, text in enumerate(texts):
        if not text:
            raise ApiError(422, f"{field}[{i}] is an empty string", "empty_input")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ApiError(
                422, f"{field}[{i}] holds a lone UTF-16 surrogate at character {e.start}: not valid Unicode text",
                "invalid_unicode",
            ) from None  # fmt: skip


def state(request: Request) -> ServerState:
    """The ServerState of the app serving `request`."""
    return request.app.state.sbert


# A batch item's prompt key: a task ("query", "document"), None, or one of the model's prompts by name.
_BY_NAME = "prompt_name:"


def by_name(prompt_name: str) -> str:
    """The prompt key that asks for the model's prompt called `prompt_name`."""
    return _BY_NAME + prompt_name


def prompt_call(kind: str | None) -> tuple[str | None, str | None]:
    """(task, prompt_name) for encode / prompt_plan from a prompt key (at most one of them set)."""
    if kind is not None and kind.startswith(_BY_NAME):
        return None, kind[len(_BY_NAME) :]
    return kind, None
