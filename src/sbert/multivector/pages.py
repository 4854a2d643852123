"""Queries and page images through a `*ForRetrieval` model (ColPali, ColQwen2): a matrix of token vectors each.

The model's own processor renders a query (its prefix and augmentation tokens) or a page (the image tokens
and the page prompt); its forward gives every position a unit vector, zero at padding. A row's matrix is
its positions under the attention mask, as sentence-transformers 6.3's MultiVectorMask keeps them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from sbert.encoding.images import opened
from sbert.formats.image_inputs import split_kinds
from sbert.modules.multimodal import TOKENS, MultimodalTransformer

PAGES_PER_BATCH = 4  # a page is ~1,000 tokens in ColPali's published shape: a few at a time


def is_page_model(module: Any) -> bool:
    """Whether the chain's input module is a `*ForRetrieval` model's (pages and queries through its processor)."""
    return isinstance(module, MultimodalTransformer) and module.transformer_task == "retrieval"


def page_rows(
    module: MultimodalTransformer, inputs: Any, batch_size: int | None, kind: str | None = None
) -> tuple[list[np.ndarray], bool]:
    """One float32 (tokens, dim) matrix per input (texts or page images), and whether one input was given.

    `kind` ("text" or "image") says what a list of inputs is, unread: a server's query text is never taken
    for an image path on the server's disk.
    """
    found = split_kinds(inputs, module.modalities) if kind is None else (kind, list(inputs), False)
    if found is None:
        single = isinstance(inputs, str)
        kind, items = "text", [inputs] if single else list(inputs)
    else:
        kind, items, single = found
    size = batch_size or PAGES_PER_BATCH
    device = next(module.parameters()).device
    rows: list[np.ndarray] = []
    for start in range(0, len(items), size):
        rows.extend(_batch_rows(module, kind, [opened(kind, item) for item in items[start : start + size]], device))
    return rows, single


def _batch_rows(
    module: MultimodalTransformer, kind: str, items: Sequence[Any], device: torch.device
) -> list[np.ndarray]:
    features = {k: v.to(device) for k, v in module.kind_features(kind, list(items)).items()}
    with torch.inference_mode():
        tokens = module(dict(features))[TOKENS].float()
    mask = features["attention_mask"].bool()
    return [tokens[i][mask[i]].cpu().numpy() for i in range(tokens.shape[0])]
