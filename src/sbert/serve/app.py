"""The FastAPI application: routes, OpenAI-style errors, body limit and metrics middleware, lifespan."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sbert.serve.routes import router
from sbert.serve.state import ApiError, FastJSON, ServerState

log = logging.getLogger(__name__)
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                413: "invalid_request_error", 422: "invalid_request_error", 503: "server_busy"}  # fmt: skip


def create_app(server: ServerState) -> FastAPI:
    """An app serving `server`'s model; the batcher starts with the app and drains when it stops."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        server.batcher.start()
        yield
        await server.batcher.stop()  # uvicorn has already let in-flight requests finish

    app = FastAPI(title="sbert", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.sbert = server
    app.include_router(router)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(Exception, internal_error)
    app.add_middleware(Guard, server=server)
    return app


def error_body(status: int, message: str, code: str | None) -> dict[str, Any]:
    """OpenAI's error shape."""
    kind = _ERROR_TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


async def http_error(request: Request, exc: Exception) -> FastJSON:
    """ApiError and Starlette's own 404/405 as JSON errors."""
    assert isinstance(exc, HTTPException)
    code = exc.code if isinstance(exc, ApiError) else None
    return FastJSON(error_body(exc.status_code, str(exc.detail), code), exc.status_code, headers=exc.headers)


async def validation_error(request: Request, exc: Exception) -> FastJSON:
    """422 naming the first offending field."""
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
    return FastJSON(error_body(422, f"{where}: {first.get('msg')}", "invalid_request"), 422)


async def internal_error(request: Request, exc: Exception) -> FastJSON:
    """Anything unexpected: logged, answered 500; the process and the other requests carry on."""
    log.exception("unhandled error on %s", request.url.path)
    return FastJSON(error_body(500, f"internal error ({type(exc).__name__})", "internal_error"), 500)


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
            host = host_name(scope)
            if self.hosts is not None and host not in self.hosts:
                message = f"Host {host!r} is not served here; start the server with --allowed-host {host} to allow it"
                await _reply(send_tracked, 400, error_body(400, message, "host_not_allowed"))
                return
            if _declared_length(scope) > limit:
                await _reply(send_tracked, 413, error_body(413, f"request body over {limit} bytes", "body_too_large"))
                return
            await self.app(scope, _limited(receive, limit), send_tracked)
        finally:
            self.server.metrics.requests.labels(route, str(status[0])).inc()
            self.server.metrics.latency.labels(route).observe(time.monotonic() - started)


def host_name(scope: Scope) -> str:
    """The Host header's name, lower case, without its port ("[::1]:8000" -> "::1")."""
    raw = next((v for k, v in scope.get("headers", []) if k == b"host"), b"").decode("latin-1").strip().lower()
    if raw.startswith("["):
        return raw[1 : raw.find("]")] if "]" in raw else raw
    name, _, port = raw.rpartition(":")
    return name if name and port.isdigit() else raw


def _declared_length(scope: Scope) -> int:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


def _limited(receive: Receive, limit: int) -> Receive:
    seen = [0]

    async def receive_limited() -> Message:
        message = await receive()
        if message["type"] == "http.request":
            seen[0] += len(message.get("body", b""))
            if seen[0] > limit:
                raise BodyTooLargeError(limit)  # FastAPI re-raises HTTPExceptions met while reading the body
        return message

    return receive_limited


async def _reply(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = FastJSON(body).body
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
