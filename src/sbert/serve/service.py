"""What every server dialect asks for, decided once.

Prompts, truncation, dimensions, unit length, quantized formats, the reranker's presence, top_n and
rank order are decided here. The OpenAI (routes.py), TEI (tei.py) and Cohere (cohere.py) routes only
translate their request and response shapes onto `embed` and `rerank`, so one input gives the same
vectors and scores in every dialect (tests/test_serve_dialects.py).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fastapi import Request

from sbert.search.quantize import quantize_embeddings
from sbert.serve.images import embed_items as image_rows
from sbert.serve.state import ApiError, Reranking, ServerState, by_name
from sbert.serve.vision_rerank import text_only, vision_scores
from sbert.similarity import rank_order, scaled_rows, similarity_of, unit_rows


@dataclass(frozen=True)
class EmbedAsk:
    """One embedding request in no dialect's shape."""

    texts: list[str]
    field: str = "input"  # the request's name for the texts, in error messages
    prompt: str | None = None  # a prompt key: a task ("query" / "document") or by_name(...) (prompt_key)
    truncate: bool = True  # False: a text over the model's limit is a 413 instead of cut
    dimensions: int | None = None  # leading dimensions kept
    normalize: bool | None = None  # True / False; None: unit length again only where `dimensions` cut them
    formats: tuple[str, ...] = ("float",)


@dataclass
class Embedded:
    """The rows of each asked format, the request's token count and the indices of the texts cut."""

    rows: dict[str, list[object]]
    tokens: int
    cut: list[int] = field(default_factory=list)


def prompt_key(
    prompts: dict[str, str], task: str | None = None, prompt_name: str | None = None, strict: bool = True
) -> str | None:
    """The prompt a request asks for: a task's prompt, or one of the model's `prompts` by name.

    An unknown name is a 422 when `strict` (TEI's prompt_name), else no prompt (Cohere's classification /
    clustering input types use the model's prompt of that name where it has one).
    """
    if prompt_name is None:
        return task
    if prompt_name in prompts:
        return by_name(prompt_name)
    if strict:
        known = ", ".join(sorted(prompts)) or "none"
        raise ApiError(
            422, f"prompt_name {prompt_name!r} is not one of the model's prompts ({known})", "invalid_prompt"
        )
    return None


async def embed(st: ServerState, request: Request, ask: EmbedAsk) -> Embedded:
    """The model's vectors for `ask`, through the dense batcher, shaped and encoded as asked."""
    check_dimensions(st, ask.dimensions)
    vectors, tokens, cut = await st.embed(ask.texts, request, ask.field, truncate=ask.truncate, kind=ask.prompt)
    return Embedded(shaped_rows(st, vectors, ask), tokens, cut)


async def embed_items(st: ServerState, request: Request, ask: EmbedAsk, items: list[tuple[str, Any]]) -> Embedded:
    """`embed` for a request holding images: the texts through the batcher, the images apart, rows in input order."""
    check_dimensions(st, ask.dimensions)
    text_at = [i for i, (kind, _) in enumerate(items) if kind == "text"]  # input index of each text
    counted: dict[str, Any] = {"tokens": 0, "cut": []}

    async def texts(values: list[str]) -> np.ndarray:
        vectors, counted["tokens"], cut = await st.embed(values, request, ask.field, truncate=ask.truncate,
                                                         kind=ask.prompt)  # fmt: skip
        counted["cut"] = [text_at[c] for c in cut]
        return vectors

    vectors = await image_rows(st, items, texts, ask.field)
    return Embedded(shaped_rows(st, vectors, ask), counted["tokens"], counted["cut"])


def check_dimensions(st: ServerState, dimensions: int | None) -> None:
    """A 422 before any work when `dimensions` asks for more than the model's width."""
    if dimensions is not None and dimensions > st.dense_width:
        raise ApiError(422, f"dimensions={dimensions} exceeds the model's {st.dense_width}", "invalid_dimensions")


def shaped_rows(st: ServerState, vectors: np.ndarray, ask: EmbedAsk) -> dict[str, list[object]]:
    """The rows as every route answers them: cut to `dimensions`, unit length where asked, in each format.

    The one place output options are applied, so every route that embeds (late chunks too) honours them.
    """
    if ask.dimensions is not None:
        vectors = vectors[:, : ask.dimensions]
    if ask.normalize or (ask.normalize is None and ask.dimensions is not None):  # shortened as OpenAI does
        vectors = unit_rows(vectors)
    similarity = similarity_of(st.dense)
    return {f: encode_rows(vectors, f, st.ranges, st.dense_width, similarity) for f in dict.fromkeys(ask.formats)}


def encode_rows(
    vectors: np.ndarray, encoding: str, ranges: np.ndarray | None, full_dim: int, similarity: str
) -> list[object]:
    """Each row as the format asks: float32 (a list or base64 of its bytes), int8/uint8 codes, packed bits."""
    if encoding in ("float", "base64"):
        rows = np.ascontiguousarray(vectors, dtype="<f4")
        if encoding == "float":
            return list(rows)
        return [base64.b64encode(row.tobytes()).decode("ascii") for row in rows]
    if encoding in ("int8", "uint8"):
        if ranges is None:
            raise ApiError(422, f"encoding_format {encoding!r} needs calibration ranges: start the server with "
                           "--calibration RANGES.npy or an int8 --index", "no_calibration")  # fmt: skip
        if vectors.shape[1] != full_dim:
            raise ApiError(422, f"encoding_format {encoding!r} is calibrated for the full {full_dim} dimensions; "
                           "drop `dimensions`", "invalid_dimensions")  # fmt: skip
        # The ranges describe the vectors as the index holds them: unit rows for a cosine model.
        # Quantizing other vectors than they describe saturates the codes.
        vectors = scaled_rows(vectors, similarity)
    return list(quantize_embeddings(vectors, encoding, ranges=ranges))


@dataclass
class Ranked:
    """(document index, score) best first, and the request's token count."""

    order: list[tuple[int, float]]
    tokens: int
    model_id: str


def reranker(st: ServerState, model: str | None = None) -> Reranking:
    """The served cross-encoder, or a 404 saying how to serve one; a `model` naming another one is a 404 too."""
    served = st.reranker
    if served is None:
        raise ApiError(404, "no reranker loaded; start the server with --reranker DIR (or --model CROSS_ENCODER)",
                       "no_reranker")  # fmt: skip
    check_model_name(model, served.model_id)
    return served


def check_model_name(asked: str | None, served: str) -> None:
    """A 404 when a request's `model` names a model other than the one served (None: the request names none)."""
    if asked is not None and asked != served:
        raise ApiError(404, f"model {asked!r} is not served here; use {served!r}", "model_not_found")


async def rerank(
    st: ServerState, request: Request, query: Any, documents: list[Any], *, model: str | None = None,
    top_n: int | None = None, truncate: bool = True, raw: bool = False,
) -> Ranked:  # fmt: skip
    """The documents' scores for the query (`raw`: logits), best first (ties in input order), the top `top_n`.

    The query and documents are texts, or (for a vision-language reranker) images: serve/vision_rerank.py.
    """
    served = reranker(st, model)
    if top_n is not None and top_n > len(documents):
        raise ApiError(422, f"top_n={top_n} exceeds the {len(documents)} documents", "invalid_top_n")
    if served.model.reads_images:
        scores, tokens = await vision_scores(st, served.model, query, documents, raw)
    else:
        texts = text_only([query, *documents])
        if texts is None:
            raise ApiError(422, "the served reranker reads text only; send the query and documents as text",
                           "invalid_input")  # fmt: skip
        scores, tokens = await served.scores(st, texts[0], texts[1:], request, raw=raw, truncate=truncate)
    order = [(int(i), float(scores[i])) for i in rank_order(scores, top_n)]
    return Ranked(order, tokens, served.model_id)
