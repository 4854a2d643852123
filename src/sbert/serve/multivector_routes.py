"""TEI's POST /embed_all for a multi-vector (ColBERT) model: `[[token vector, ...], ...]`, one matrix per input.

The extension field `input_type` ("query" | "document", default "document") picks the query rules
(length, [MASK] expansion) or the document rules (skiplist); `prompt_name` names a saved prompt.
The batching and checks are serve/multivector_service.py's, shared with /v1/embeddings.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr

from sbert.serve.multivector_service import embed_tokens
from sbert.serve.routes import Protected
from sbert.serve.schemas import Texts, as_list
from sbert.serve.state import FastJSON, state
from sbert.serve.tei import check_direction

multivector_router = APIRouter()


class TeiEmbedAllRequest(BaseModel):
    """POST /embed_all: TEI's request, plus `input_type` for a late-interaction model's query side."""

    model_config = ConfigDict(extra="ignore")
    inputs: Texts
    truncate: StrictBool | None = None
    truncation_direction: Literal["Right", "Left", "right", "left"] = "Right"
    prompt_name: StrictStr | None = None
    input_type: Literal["query", "document"] = "document"


@multivector_router.post("/embed_all", dependencies=Protected)
async def embed_all(body: TeiEmbedAllRequest, request: Request) -> FastJSON:
    """Each input's scored token vectors (float32 rows), as TEI's /embed_all lists them."""
    check_direction(body.truncation_direction)
    key = (body.input_type, body.prompt_name)
    mats, _ = await embed_tokens(state(request), as_list(body.inputs), request, "inputs", key,
                                 body.truncate is not False)  # fmt: skip
    return FastJSON(mats)
