"""Ollama's embedding routes: POST /api/embed and the older /api/embeddings, as its clients call them.

The `ollama` Python client, LangChain's `OllamaEmbeddings`, Haystack and many desktop apps speak
these. Thin translations onto the embed code the other dialects use (serve/service.py):

- /api/embed takes `input` (a string or a list), `truncate` (default true; false makes an over-long
  input a 400, as Ollama answers it), `dimensions` and `model`; it answers unit-length vectors, as
  Ollama does, with `prompt_eval_count` (the request's tokens) and the durations in nanoseconds.
  As in Ollama's handler: `dimensions` cuts only when 0 < dimensions < the model's width (any other
  value keeps the whole unit vector), and an empty input (`""` or `[]`) answers 200 with no embeddings.
- /api/embeddings takes one `prompt` and answers its vector as the model gives it (not renormalized:
  Ollama's legacy route does not normalize either).
- `model` must name the served model, as on every route. `options` and `keep_alive` are accepted and
  ignored (the model stays loaded). Errors answer `{"error": message}`, Ollama's shape.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr

from sbert.serve.routes import Protected
from sbert.serve.service import EmbedAsk, check_model_name, embed
from sbert.serve.state import ApiError, FastJSON, state

ollama_router = APIRouter()
# The paths whose errors answer in Ollama's body (app.py picks the shape by path).
OLLAMA_PATHS = frozenset({"/api/embed", "/api/embeddings"})


class OllamaEmbedRequest(BaseModel):
    """POST /api/embed: one text or a list of them."""

    model_config = ConfigDict(extra="ignore")  # options, keep_alive
    model: StrictStr
    input: StrictStr | list[StrictStr]
    truncate: StrictBool = True
    dimensions: StrictInt | None = None


class OllamaEmbeddingsRequest(BaseModel):
    """POST /api/embeddings: the older route, one `prompt`."""

    model_config = ConfigDict(extra="ignore")
    model: StrictStr
    prompt: StrictStr


@ollama_router.post("/api/embed", dependencies=Protected)
async def embed_ollama(body: OllamaEmbedRequest, request: Request) -> FastJSON:
    """ollama.Client().embed: unit-length vectors for `input`, in order."""
    started = time.perf_counter_ns()
    st = state(request)
    check_model_name(body.model, st.model_id)
    texts = ([body.input] if body.input else []) if isinstance(body.input, str) else body.input
    if not texts:  # Ollama answers an empty input with no embeddings, not an error
        return FastJSON({"model": body.model, "embeddings": []})
    dimensions = ollama_dimensions(body.dimensions, st.dense_width)
    ask = EmbedAsk(texts, "input", truncate=body.truncate, dimensions=dimensions, normalize=True)
    try:
        done = await embed(st, request, ask)
    except ApiError as error:
        if error.status_code == 413:  # truncate: false over the limit is Ollama's 400
            raise ApiError(400, str(error.detail), error.code) from None
        raise
    return FastJSON({"model": body.model, "embeddings": done.rows["float"], "total_duration": time.perf_counter_ns()
                     - started, "load_duration": 0, "prompt_eval_count": done.tokens})  # fmt: skip


def ollama_dimensions(value: int | None, width: int) -> int | None:
    """Ollama's rule: cut only when 0 < dimensions < the model's `width`; otherwise the whole vector."""
    return value if value is not None and 0 < value < width else None


@ollama_router.post("/api/embeddings", dependencies=Protected)
async def embeddings_ollama(body: OllamaEmbeddingsRequest, request: Request) -> FastJSON:
    """ollama.Client().embeddings: the model's vector for `prompt`."""
    st = state(request)
    check_model_name(body.model, st.model_id)
    done = await embed(st, request, EmbedAsk([body.prompt], "prompt"))
    return FastJSON({"embedding": done.rows["float"][0]})
