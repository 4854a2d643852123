"""The streamed host side: texts tokenized in chunks on every core, handed on in windows as they finish.

Tokenizing a whole corpus before the first batch leaves the device idle for that long, and one
tokenizer call runs on one core. Here chunks of texts are tokenized by a pool of threads (the Rust
tokenizer releases the GIL, so they run in parallel), a bounded number ahead of the consumer, and
the consumer gets windows of consecutive rows in input order as soon as each window's chunks are
done: it orders and batches a window while the pool tokenizes the next ones. Row i of the corpus
is row i - window.start of its window, so the output order never depends on which thread finished
first. No torch here: the static tier and the benchmarks use it too.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

# One tokenizer call's texts: large enough that the call's fixed cost and the hand-over vanish
# (measured: under 1% at 512 passages), small enough that the first window is ready at once.
STREAM_CHUNK = 512
STREAM_WINDOW = 8192  # rows per window: the consumer sorts and batches these by length
STREAM_MIN_TEXTS = 2 * STREAM_CHUNK  # below this, one call on the calling thread (no pool to start)

Tokenize = Callable[[list[str]], tuple[list[list[int]], list[int]]]  # texts -> (ids, indices that were cut)


@dataclass(frozen=True)
class Window:
    """Consecutive corpus rows [start, start + len(ids)) with their token ids; `cut` indexes the corpus."""

    start: int
    ids: Sequence[Sequence[int]]
    cut: list[int]


def stream_threads(threads: int | None = None) -> int:
    """Tokenizer threads: `threads`, else SBERT_TOKENIZER_THREADS, else every core this process may use."""
    if threads is None:
        threads = int(os.environ.get("SBERT_TOKENIZER_THREADS", "0")) or usable_cores()
    if threads < 1:
        raise ValueError(f"tokenizer threads must be >= 1, got {threads}")
    return threads


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def token_windows(
    tokenize: Tokenize, texts: Sequence[str], threads: int | None = None, chunk: int = STREAM_CHUNK,
    window: int = STREAM_WINDOW,
) -> Iterator[Window]:  # fmt: skip
    """Windows of `texts`' token ids in input order, the first one out before the rest are tokenized.

    The pool works a whole window ahead (plus two chunks a thread): while the consumer embeds one window, the
    next one is tokenized, so a long encode takes about max(host, device) rather than their sum. Memory stays
    bounded (about two windows of ids) whatever the corpus size.
    """
    if chunk < 1 or window < 1:
        raise ValueError(f"chunk and window must be >= 1, got {chunk}, {window}")
    n = len(texts)
    if n < STREAM_MIN_TEXTS:
        ids, cut = tokenize(list(texts)) if n else ([], [])
        yield Window(0, ids, cut)
        return
    workers = stream_threads(threads)
    starts = range(0, n, chunk)
    with ThreadPoolExecutor(workers, thread_name_prefix="sbert-tokenize") as pool:
        pending: deque[tuple[int, Future[tuple[list[list[int]], list[int]]]]] = deque()
        submitted = iter(starts)

        ahead = max(2 * workers, -(-window // chunk) + workers)  # chunks in flight: a window's worth at least

        def top_up() -> None:
            while len(pending) < ahead:
                start = next(submitted, None)
                if start is None:
                    return
                pending.append((start, pool.submit(tokenize, list(texts[start : start + chunk]))))

        top_up()
        first, rows, cut = 0, [], []  # the window being filled: its first corpus row, its ids, its cut rows
        while pending:
            start, future = pending.popleft()
            ids, cut_here = future.result()
            top_up()
            rows.extend(ids)
            cut.extend(start + i for i in cut_here)
            # The first window is one chunk, so the device starts at once; later ones are full windows.
            if len(rows) >= (window if first else min(chunk, window)) or not pending:
                yield Window(first, rows, cut)
                first, rows, cut = start + len(ids), [], []
