"""Encoding with a prompt that pooling leaves out (`include_prompt=False` in the Pooling config).

The prompt's tokens still pass through the encoder, so every other token attends to them, but the
sentence vector averages (or maxes) only the tokens after them, as sentence-transformers does: the
first `prompt_length` positions ([CLS] and the prompt, without its closing special token) are
masked out of pooling. This runs the plain padded torch path, which carries `prompt_length` to
the Pooling module; the packed GPU engine and the ONNX graphs pool inside their own code.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from sbert.errors import BackendError
from sbert.modules import Module, Pooling, Transformer

BATCH = 32  # rows per padded batch on this path


def excludes_prompt(modules: Sequence[Module]) -> bool:
    """Whether a Pooling module of the chain leaves prompt tokens out."""
    return any(isinstance(m, Pooling) and not m.include_prompt for m in modules)


def prompt_tokens(transformer: Transformer, prompt: str) -> int:
    """Tokens a prompt occupies at the start of an input: its ids with specials, less a closing special."""
    ids = transformer.token_ids([prompt])[0][0]
    special = set(getattr(transformer.tokenizer, "all_special_ids", []))
    return len(ids) - 1 if ids and ids[-1] in special else len(ids)


def embed_without_prompt(
    modules: Sequence[Module], transformer: Transformer, ids: Sequence[Sequence[int]], skip: int,
    batch_size: int | None, backend: str,
) -> np.ndarray:  # fmt: skip
    """float32 (len(ids), dim): each row pooled over its tokens after the first `skip`."""
    if backend != "torch":
        raise BackendError(f"backend {backend!r}: a pooling with include_prompt=false needs backend='torch'")
    device = next(modules[0].parameters()).device
    size = batch_size or BATCH
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    out: np.ndarray | None = None
    with torch.inference_mode():
        for start in range(0, len(order), size):
            rows = order[start : start + size]
            features = {k: v.to(device) for k, v in transformer.pad([ids[i] for i in rows]).items()}
            features["prompt_length"] = torch.tensor(skip)
            for module in modules:
                features = module(features)
            vectors = features["sentence_embedding"].float().cpu().numpy()
            out = np.empty((len(ids), vectors.shape[1]), np.float32) if out is None else out
            out[rows] = vectors
    return out if out is not None else np.zeros((0, 0), np.float32)
