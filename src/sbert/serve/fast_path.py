"""POST /v1/embeddings with a plain text body, answered ahead of FastAPI's routing, dependencies and validation.

Under one-text requests FastAPI's own layers (its middlewares, routing, dependency solving, pydantic
validation, the request body's second parse) took ~40% of the event loop's samples
(`benchmarks/serve/serve_profile.py`). A body that is a JSON object whose fields are exactly what
EmbeddingsRequest accepts for text (`input` a string or a non-empty list of strings, `model` a string,
the optional fields in their declared types and values) is checked here in a few dict lookups and
handed to the same route function with the same key check; its answer and its errors are that
function's. Anything else (token ids, images, chunks, a field of the wrong type, a body that is
not JSON, another content type) goes on to FastAPI unchanged, with the body it was read from, so
every error keeps the shape and wording FastAPI's path gives it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, get_args, get_origin

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sbert.serve.routes import embeddings, require_key
from sbert.serve.schemas import EmbeddingsRequest
from sbert.serve.state import ApiError

FAST_PATH = "/v1/embeddings"
ErrorAnswer = Callable[[Request, Exception], Awaitable[Response]]


def _choices(field: str) -> frozenset[Any]:
    """The values a Literal field of EmbeddingsRequest (optionally `| None`) allows, None included."""
    annotation = EmbeddingsRequest.model_fields[field].annotation
    parts = get_args(annotation) if get_origin(annotation) is not Literal else (annotation,)
    values: set[Any] = {None} if type(None) in parts else set()
    for part in parts:
        if get_origin(part) is Literal:
            values.update(get_args(part))
    return frozenset(values)


# Read from the schema, so the two paths cannot drift apart on what a value may be.
_FORMATS = _choices("encoding_format")
_INPUT_TYPES = _choices("input_type")


def plain_body(raw: bytes, content_type: str | None) -> EmbeddingsRequest | None:
    """The request body as EmbeddingsRequest when it is a plain text request; None for FastAPI to judge.

    None whenever FastAPI might answer anything but this same value: not JSON (or JSON orjson reads
    differently from the standard library), not an object, a field missing or off its declared type.
    """
    if content_type is not None and content_type.split(";", 1)[0].strip().lower() != "application/json":
        return None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(data) is not dict or type(data.get("model")) is not str or not _plain_input(data.get("input")):
        return None
    if data.get("modality") is not None or data.get("chunks") is not None:
        return None  # images and late chunking: the full path
    if not _one_of(data.get("encoding_format", "float"), _FORMATS) or not _one_of(data.get("input_type"), _INPUT_TYPES):
        return None
    dimensions = data.get("dimensions")
    if dimensions is not None and (type(dimensions) is not int or dimensions < 1):
        return None
    if type(data.get("truncate", True)) is not bool:
        return None
    fields = {k: v for k, v in data.items() if k in EmbeddingsRequest.model_fields}
    return EmbeddingsRequest.model_construct(**fields)


def _one_of(value: Any, choices: frozenset[Any]) -> bool:
    """Whether `value` is one of a Literal field's `choices`; False, never TypeError, for a list or an object."""
    return (value is None or type(value) is str) and value in choices


def _plain_input(value: Any) -> bool:
    if type(value) is str:
        return True
    return type(value) is list and bool(value) and all(type(v) is str for v in value)


async def serve_embeddings(app: ASGIApp, scope: Scope, receive: Receive, send: Send, errors: ErrorAnswer) -> None:
    """Answer a POST /v1/embeddings here when its body is plain text (plain_body), else pass it to `app`.

    `errors` answers an exception as the app's own handlers do (serve/app.py's answer_error).
    """
    request = Request(scope, receive)
    try:
        raw = await _read_body(receive)
    except ApiError as refused:  # the body limit, met while reading (serve/app.py's _limited)
        await (await errors(request, refused))(scope, receive, send)
        return
    if raw is None:
        return  # the client left before its body was whole: nobody to answer
    body = plain_body(raw, request.headers.get("content-type"))
    if body is None:
        await app(scope, _replayed(raw, receive), send)
        return
    answer: Response
    try:
        await require_key(request)
        answer = await embeddings(body, request)
    except Exception as failed:  # ApiError's 4xx, anything else a logged 500: the server carries on
        answer = await errors(request, failed)
    await answer(scope, receive, send)


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body; None when the client disconnects first."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replayed(raw: bytes, receive: Receive) -> Receive:
    """A receive that gives the already read body once, then whatever the connection sends next."""
    pending = [raw]

    async def replay() -> Message:
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": False}
        return await receive()

    return replay
