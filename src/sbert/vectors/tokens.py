"""Token ids from a Rust tokenizer, spread over threads for large inputs (no torch: the static tier uses it)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

# Texts per tokenizer call at least when several threads share the work: below this a thread's
# start costs more than the texts it would take off the others.
MIN_CHUNK = 64


def fast_ids(tokenizer: Any, texts: list[str], add_special_tokens: bool = True) -> list[list[int]]:
    """Token ids of `texts` from a Rust tokenizer, chunks spread over threads for large inputs.

    The Rust call releases the GIL, so threads tokenize in parallel; each chunk's ids come
    back in order. The input is cut into one chunk per core (at least MIN_CHUNK texts each):
    1,633 passages of 128 tokens are 0.6 s of one core's work, which a GPU encodes in a
    fraction of that, so a fixed large chunk left the whole input on one thread.
    """

    def ids(chunk: list[str]) -> list[list[int]]:
        return [e.ids for e in tokenizer.encode_batch_fast(chunk, add_special_tokens=add_special_tokens)]

    if len(texts) < 2 * MIN_CHUNK:  # before asking the core count: a syscall, on a server's every request
        return ids(texts)
    workers = min(os.cpu_count() or 1, len(texts) // MIN_CHUNK)
    if workers < 2:
        return ids(texts)
    step = -(-len(texts) // workers)
    chunks = [texts[i : i + step] for i in range(0, len(texts), step)]
    with ThreadPoolExecutor(len(chunks), thread_name_prefix="sbert-tokenize") as pool:
        return [row for part in pool.map(ids, chunks) for row in part]


def saved_limit(tokenizer: Any) -> int | None:
    """The length a Rust tokenizer cuts at, as its tokenizer.json saves it (None: it cuts nothing)."""
    truncation = getattr(tokenizer, "truncation", None)
    return int(truncation["max_length"]) if truncation else None


def cut_by_limit(
    tokenizer: Any, texts: Sequence[str], rows: Sequence[Sequence[int]], add_special_tokens: bool
) -> list[int]:
    """Indices of `texts` whose `rows` the tokenizer's saved truncation cut (rows at the limit, checked whole)."""
    limit = saved_limit(tokenizer)
    at_limit = [i for i, row in enumerate(rows) if limit is not None and len(row) >= limit]
    if not at_limit:
        return []
    whole = type(tokenizer).from_str(tokenizer.to_str())
    whole.no_truncation()
    full = whole.encode_batch([texts[i] for i in at_limit], add_special_tokens=add_special_tokens)
    return [i for i, encoding in zip(at_limit, full, strict=True) if len(encoding.ids) > len(rows[i])]
