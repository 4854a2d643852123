"""Ollama's embedding routes: POST /api/embed and the older /api/embeddings, as its clients call them.

The `ollama` Python client, LangChain's `OllamaEmbeddings`, Haystack and many desktop apps speak
these. Thin translations onto the embed code the other dialects use (serve/service.py):

- /api/embed takes `input` (a string or a list), `truncate` (default true; false makes an over-long
  input an error), `dimensions` and `model`; it answers unit-length vectors, as Ollama does, with
  `prompt_eval_count` (the request's tokens) and the durations in nanoseconds.
- /api/embeddings takes one `prompt` and answers its vector as the model gives it (not renormalized:
  Ollama's legacy route does not normalize either).
- `model` must name the served model, as on every route. `options` and `keep_alive` are accepted and
  ignored (the model stays loaded). Errors answer `{"error": message}`, Ollama's shape.
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from sbert.serve.routes import Protected
from sbert.serve.service import EmbedAsk, check_model_name, embed
from sbert.serve.state import FastJSON, state

ollama_router = APIRouter()
# The paths whose errors answer in Ollama's body (app.py picks the shape by path).
OLLAMA_PATHS = frozenset({"/api/embed", "/api/embeddings"})


class OllamaEmbedRequest(BaseModel):
    """POST /api/embed: one text or a list of them."""

    model_config = ConfigDict(extra="ignore")  # options, keep_alive
    model: StrictStr
    input: StrictStr | Annotated[list[StrictStr], Field(min_length=1)]
    truncate: StrictBool = True
    dimensions: Annotated[StrictInt, Field(ge=1)] | None = None


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
    texts = [body.input] if isinstance(body.input, str) else body.input
    done = await embed(st, request, EmbedAsk(texts, "input", truncate=body.truncate, dimensions=body.dimensions,
                                             normalize=True))  # fmt: skip
    return FastJSON({"model": body.model, "embeddings": done.rows["float"], "total_duration": time.perf_counter_ns()
                     - started, "load_duration": 0, "prompt_eval_count": done.tokens})  # fmt: skip


@ollama_router.post("/api/embeddings", dependencies=Protected)
async def embeddings_ollama(body: OllamaEmbeddingsRequest, request: Request) -> FastJSON:
    """ollama.Client().embeddings: the model's vector for `prompt`."""
    st = state(request)
    check_model_name(body.model, st.model_id)
    done = await embed(st, request, EmbedAsk([body.prompt], "prompt"))
    return FastJSON({"embedding": done.rows["float"][0]})
