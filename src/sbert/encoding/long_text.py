"""The `chunk` policy for inputs beyond max_seq_length: overlapping windows, mean of their vectors.

Truncation keeps only the first max_seq_length tokens; chunking embeds every token of a long
input by cutting it into windows that share a quarter of their tokens with the next, each
wrapped in the model's special tokens, and averaging the window embeddings.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import torch

from sbert.errors import TruncationError
from sbert.modules.normalize import l2_normalize
from sbert.modules.transformer import Transformer

LongText = Literal["truncate", "chunk"]
LONG_TEXT_POLICIES = ("truncate", "chunk")
OnTruncation = Literal["warn", "error", "ignore"]


def special_tokens(transformer: Transformer) -> tuple[list[int], list[int]]:
    """The ids a tokenizer puts before and after a single sequence ([CLS] / [SEP], <s> / </s>)."""
    tokenizer = transformer.tokenizer
    bare = tokenizer("hello world", add_special_tokens=False)["input_ids"]
    full = tokenizer("hello world", add_special_tokens=True)["input_ids"]
    for start in range(len(full) - len(bare) + 1):
        if full[start : start + len(bare)] == bare:
            return list(full[:start]), list(full[start + len(bare) :])
    raise ValueError("cannot locate the text between the tokenizer's special tokens")


def windows(transformer: Transformer, text: str, prompt: str = "") -> list[list[int]]:
    """Token-id windows covering all of `text`, each at most max_seq_length long with specials.

    Every window starts with the prompt's tokens (after the opening specials), so each one is
    embedded as the model expects its inputs, and a pooling that leaves the prompt out skips the
    same leading positions in every window (encoding/prompted.py counts them).
    """
    prefix, suffix = special_tokens(transformer)
    head = prefix + (transformer.tokenizer(prompt, add_special_tokens=False)["input_ids"] if prompt else [])
    body = transformer.tokenizer(text, add_special_tokens=False)["input_ids"]
    width = transformer.max_seq_length - len(head) - len(suffix)
    if width <= 0:
        raise ValueError(
            f"max_seq_length={transformer.max_seq_length} leaves no room for text after the special tokens and prompt"
        )
    step = max(1, width - width // 4)
    starts = range(0, max(len(body) - width, 0) + step, step)
    return [head + body[s : s + width] + suffix for s in starts if s < len(body) or s == 0]


def expand(
    transformer: Transformer, texts: Sequence[str], ids: list[list[int]], cut: Sequence[int], prompt: str = ""
) -> tuple[list[list[int]], list[int]]:
    """Replace each cut row by its windows (each with `prompt` in front): rows beyond len(texts) are extra windows.

    Returns the rows and, for each row, the input index it belongs to.
    """
    rows = list(ids)
    owners = list(range(len(ids)))
    for i in cut:
        first, *rest = windows(transformer, texts[i], prompt)
        rows[i] = first
        rows.extend(rest)
        owners.extend([i] * len(rest))
    return rows, owners


def merge(vectors: torch.Tensor, owners: Sequence[int], count: int, renormalize: bool) -> torch.Tensor:
    """Mean of each input's window vectors: (len(owners), dim) -> (count, dim)."""
    if len(owners) == count:
        return vectors
    index = torch.as_tensor(owners, dtype=torch.long)
    sums = torch.zeros((count, vectors.shape[1]), dtype=vectors.dtype).index_add_(0, index, vectors)
    sizes = torch.bincount(index, minlength=count).clamp(min=1).unsqueeze(1).to(vectors.dtype)
    means = sums / sizes
    return l2_normalize(means) if renormalize else means


def report_truncation(cut: list[int], total: int, limit: int, policy: OnTruncation) -> None:
    """Warn once per call (or raise) when inputs were longer than the model's token limit."""
    if not cut or policy == "ignore":
        return
    message = (
        f"{len(cut)} of {total} inputs exceeded max_seq_length={limit} tokens and were truncated "
        f"(first at index {cut[0]})"
    )
    if policy == "error":
        raise TruncationError(message.replace("and were truncated", "(truncation refused)"))
    warnings.warn(message, stacklevel=3)
