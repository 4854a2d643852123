"""The FastAPI application: routes, OpenAI-style errors, body limit and metrics middleware, lifespan."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sbert.serve.cohere import cohere_router
from sbert.serve.fast_path import FAST_PATH, serve_embeddings
from sbert.serve.host_rule import BadHostError, host_name
from sbert.serve.multivector_routes import multivector_router
from sbert.serve.ollama import ollama_router
from sbert.serve.routes import router
from sbert.serve.sparse_routes import sparse_router
from sbert.serve.state import ApiError, FastJSON, ServerState
from sbert.serve.tei import tei_router

log = logging.getLogger(__name__)
# pydantic's names for the branches of a union in an error location: str, list[str], int, ...
_BRANCH_TAG = re.compile(r"^(str|int|float|bool|list\[.*\]|constrained-.*|function-.*)$")
# After an early 413, up to this much of the rest of the body is read and dropped before the
# connection closes, so a client that writes its whole body first still reads the answer.
_LINGER_BYTES = 16 * 1024 * 1024
_LINGER_SECONDS = 5.0
# The codes of a route whose kind of model the server does not hold (serve/service.py, state.py).
MISSING_KIND = frozenset({"no_dense_model", "no_reranker", "model_not_sparse", "model_not_multi_vector"})
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                413: "invalid_request_error", 422: "invalid_request_error", 503: "server_busy"}  # fmt: skip


def create_app(server: ServerState) -> FastAPI:
    """An app serving `server`'s model; the batcher starts with the app and drains when it stops."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        batchers = [server.batcher] if server.batcher is not None else []
        batchers += [server.reranker.batcher] if server.reranker is not None else []
        batchers += [server.sparse_batcher] if server.sparse_batcher is not None else []
        batchers += [server.multivector_batcher] if server.multivector_batcher is not None else []
        for batcher in batchers:
            batcher.start()
        yield
        for batcher in batchers:
            await batcher.stop()  # uvicorn has already let in-flight requests finish

    # With a key set, the schema would tell anyone what the server offers: it is not served then.
    openapi = None if server.settings.api_key else "/openapi.json"
    app = SbertApp(title="sbert", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=openapi)
    app.state.sbert = server
    app.guard = Guard(app.framework, server)
    app.include_router(router)
    app.include_router(tei_router)
    app.include_router(sparse_router)
    app.include_router(multivector_router)
    app.include_router(cohere_router)
    app.include_router(ollama_router)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(Exception, internal_error)
    return app


class SbertApp(FastAPI):
    """FastAPI with the Guard outside its own middleware stack, so plain embedding requests skip that stack.

    FastAPI's layers around every route (its telemetry check, error, exception-telemetry and body-limit
    middlewares, each a coroutine and a wrapped `send`) were about a tenth of the event loop's CPU under
    one-text requests (docs/serving.md). The Guard (host check, body limit, metrics) sees every request first.
    """

    guard: Guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one connection event: through the Guard for HTTP, FastAPI's own stack for the rest."""
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                # FastAPI records requests itself once OpenTelemetry is set up (by now: `opentelemetry-instrument`
                # sets it up before the app starts); then every request goes through its stack to be recorded.
                native = getattr(self, "_native_telemetry", None)
                self.guard.fast = not (native is not None and native.enabled())
            await super().__call__(scope, receive, send)
            return
        scope["app"] = self  # as Starlette sets it: routes find the server state through request.app
        await self.guard(scope, receive, send)

    async def framework(self, scope: Scope, receive: Receive, send: Send) -> None:
        """FastAPI's own handling of a request: its middleware stack, routing, validation and handlers."""
        await super().__call__(scope, receive, send)


def error_body(status: int, message: str, code: str | None) -> dict[str, Any]:
    """OpenAI's error shape."""
    kind = _ERROR_TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def error_answer(request: Request, status: int, message: str, code: str | None, headers: Any = None) -> FastJSON:
    """The error in the shape of the API asked: TEI's and Cohere's on their paths, OpenAI's everywhere else."""
    from sbert.serve.cohere import COHERE_PATHS
    from sbert.serve.ollama import OLLAMA_PATHS
    from sbert.serve.tei import TEI_PATHS

    if request.url.path in COHERE_PATHS:  # Cohere answers a bad request 400 with {"message": ...}
        return FastJSON({"message": message}, 400 if status == 422 else status, headers=headers)
    if request.url.path in OLLAMA_PATHS:  # Ollama answers {"error": message}, a bad request with 400
        return FastJSON({"error": message}, 400 if status == 422 else status, headers=headers)
    if request.url.path not in TEI_PATHS:
        return FastJSON(error_body(status, message, code), status, headers=headers)
    # TEI's types; it answers an overloaded queue with 429, an empty input as "Empty", and a route the model
    # cannot serve (/embed_sparse on a dense model, /rerank without a reranker) with 424 "Backend".
    status = 424 if code in MISSING_KIND else status
    kind = "Empty" if code == "empty_input" else "Overloaded" if status == 503 else (
        "Backend" if status >= 500 or status == 424 else "Validation")  # fmt: skip
    return FastJSON({"error": message, "error_type": kind}, 429 if status == 503 else status, headers=headers)


async def http_error(request: Request, exc: Exception) -> FastJSON:
    """ApiError and Starlette's own 404/405 as JSON errors."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 400 and not isinstance(exc, ApiError):
        # FastAPI's own 400: the body could not be parsed (invalid UTF-8, JSON nested too deep)
        return error_answer(request, 400, f"body is not valid JSON ({exc.detail})", "invalid_json")
    code = exc.code if isinstance(exc, ApiError) else None
    return error_answer(request, exc.status_code, str(exc.detail), code, exc.headers)


async def validation_error(request: Request, exc: Exception) -> FastJSON:
    """400 for a body that is not JSON (as OpenAI, TEI and Cohere answer), else 422 naming the first offending field."""
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    broken = next((e for e in errors if e.get("type") == "json_invalid"), None)
    if broken is not None:
        return error_answer(request, 400, describe_bad_json(broken), "invalid_json")
    return error_answer(request, 422, describe_validation(errors), "invalid_request")


def describe_bad_json(error: Any) -> str:
    """`body is not valid JSON: Expecting ',' delimiter at character 18`, from pydantic's json_invalid error."""
    reason = str((error.get("ctx") or {}).get("error") or "JSON decode error")
    where = [p for p in error.get("loc", ()) if isinstance(p, int)]
    return f"body is not valid JSON: {reason}" + (f" at character {where[0]}" if where else "")


def describe_validation(errors: list[Any]) -> str:
    """One line naming the offending field: `input[2]: is null, expected a string`.

    A field typed "string or list of strings" fails both branches; the error about the list
    (its length, or one item) is the one that names the problem, so it goes first.
    """
    if not errors:
        return "body: invalid request"

    def about_items(error: Any) -> tuple[bool, bool]:
        loc = error.get("loc", ())
        list_branch = any(str(p).startswith("list[") for p in loc)
        return (not any(isinstance(p, int) for p in loc), not list_branch)

    first = sorted(errors, key=about_items)[0]
    where = field_path(first.get("loc", ()))
    indexed = any(isinstance(p, int) for p in first.get("loc", ()))
    message = "is null, expected a string" if indexed and first.get("input") is None else first.get("msg")
    return f"{where}: {message}"


def field_path(loc: Any) -> str:
    """("body", "input", "list[str]", 2) -> "input[2]": union branch tags dropped, indices bracketed."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part != "body" and not _BRANCH_TAG.match(str(part)):
            path += f".{part}" if path else str(part)
    return path or "body"


async def answer_error(request: Request, exc: Exception) -> FastJSON:
    """What the app's handlers answer an exception from a route: ApiError's own status, anything else a 500."""
    return await (http_error(request, exc) if isinstance(exc, HTTPException) else internal_error(request, exc))


async def internal_error(request: Request, exc: Exception) -> FastJSON:
    """Anything unexpected: logged, answered 500; the process and the other requests carry on."""
    log.exception("unhandled error on %s", request.url.path)
    return error_answer(request, 500, f"internal error ({type(exc).__name__})", "internal_error")


class BodyTooLargeError(ApiError):
    """The request body passed --max-body-bytes while being read."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over {limit} bytes", "body_too_large")


class Guard:
    """ASGI middleware: refuses bodies over the limit (declared or streamed), counts and times every request."""

    def __init__(self, app: ASGIApp, server: ServerState) -> None:
        self.app, self.server = app, server
        self.routes = {r.path for r in router.routes if hasattr(r, "path")}
        self.hosts = server.settings.host_allow_list()
        self.fast = True  # plain embedding requests answered here (fast_path.py), not through the framework
        self._counted: dict[tuple[str, int], Callable[[], None]] = {}  # a labelled child's inc, per (route, status)
        self._timed: dict[str, Callable[[float], None]] = {}  # a labelled child's observe, per route

    def _record(self, route: str, status: int, seconds: float) -> None:
        """Count and time one request; labelled children looked up once (`labels` is a lock and a tuple's hash)."""
        metrics = self.server.metrics
        count = self._counted.get((route, status))
        if count is None:
            count = self._counted[(route, status)] = metrics.requests.labels(route, str(status)).inc
        time_it = self._timed.get(route)
        if time_it is None:
            time_it = self._timed[route] = metrics.latency.labels(route).observe
        count()
        time_it(seconds)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one connection event."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route = scope["path"] if scope["path"] in self.routes else "other"  # bounded label set
        started, status = time.monotonic(), [500]
        limit = self.server.settings.max_body_bytes

        async def send_tracked(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            try:
                host = host_name(scope.get("headers", []), scope.get("http_version", "1.1"))
            except BadHostError as bad:
                await _reply(send_tracked, 400, error_body(400, str(bad), "invalid_host"))
                return
            if self.hosts is not None and host not in self.hosts:
                message = f"Host {host!r} is not served here; start the server with --allowed-host {host} to allow it"
                await _reply(send_tracked, 400, error_body(400, message, "host_not_allowed"))
                return
            declared = _declared_length(scope)
            if declared > limit:
                if declared <= _LINGER_BYTES:
                    await linger(receive)
                await _reply(send_tracked, 413, error_body(413, f"request body over {limit} bytes", "body_too_large"))
                return
            if self.fast and scope["path"] == FAST_PATH and scope["method"] == "POST":
                await serve_embeddings(self.app, scope, _limited(receive, limit), send_tracked, answer_error)
                return
            await self.app(scope, _limited(receive, limit), send_tracked)
        finally:
            self._record(route, status[0], time.monotonic() - started)


def _declared_length(scope: Scope) -> int:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


async def linger(receive: Receive, seen: int = 0) -> None:
    """Read and drop the rest of a refused body, up to a bound, before the 413 goes out.

    Answering and closing while the client still writes makes the kernel reset the
    connection, and a client that sends its whole body before reading (urllib) then sees
    "Broken pipe" instead of the 413. (uvicorn ends the request once the answer is sent, so
    the body must be read first.)
    """
    try:
        async with asyncio.timeout(_LINGER_SECONDS):
            while seen < _LINGER_BYTES:
                message = await receive()
                if message["type"] != "http.request":
                    return
                seen += len(message.get("body", b""))
                if not message.get("more_body", False):
                    return
    except TimeoutError:
        return


def _limited(receive: Receive, limit: int) -> Receive:
    seen = [0]

    async def receive_limited() -> Message:
        message = await receive()
        if message["type"] == "http.request":
            seen[0] += len(message.get("body", b""))
            if seen[0] > limit:
                if message.get("more_body", False):
                    await linger(receive, seen[0])
                raise BodyTooLargeError(limit)  # FastAPI re-raises HTTPExceptions met while reading the body
        return message

    return receive_limited


async def _reply(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = FastJSON(body).body
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
