"""Token ids from a Rust tokenizer, spread over threads for large inputs (no torch: the static tier uses it)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

FAST_CHUNK = 4096  # texts per tokenizer call when several threads share the work


def fast_ids(tokenizer: Any, texts: list[str], add_special_tokens: bool = True) -> list[list[int]]:
    """Token ids of `texts` from a Rust tokenizer, chunks spread over threads for large inputs.

    The Rust call releases the GIL, so threads tokenize in parallel; each chunk's ids come
    back in order.
    """

    def ids(chunk: list[str]) -> list[list[int]]:
        return [e.ids for e in tokenizer.encode_batch_fast(chunk, add_special_tokens=add_special_tokens)]

    if len(texts) <= 2 * FAST_CHUNK:
        return ids(texts)
    chunks = [texts[i : i + FAST_CHUNK] for i in range(0, len(texts), FAST_CHUNK)]
    with ThreadPoolExecutor(min(len(chunks), max(1, os.cpu_count() or 1))) as pool:
        return [row for part in pool.map(ids, chunks) for row in part]
