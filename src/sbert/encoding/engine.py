"""From token ids to an ordered (n, dim) float32 array through any backend."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
from tqdm.auto import tqdm

from sbert.backends.base import Backend, lane_workers
from sbert.vectors.batching import fixed_batches, length_order, packed_batches, token_batches
from sbert.vectors.token_stream import Tokenize, Window, token_windows

# Progress bars appear by default only for inputs long enough to take a while.
PROGRESS_MIN_SENTENCES = 2048


def check_batch_sizes(batch_size: int | None, batch_tokens: int | None) -> None:
    """Both must be positive integers or None."""
    for name, value in (("batch_size", batch_size), ("batch_tokens", batch_tokens)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
            raise ValueError(f"{name} must be a positive integer or None, got {value!r}")


def plan_batches(
    backend: Backend, lengths: Sequence[int], batch_size: int | None, batch_tokens: int | None
) -> list[list[int]]:
    """Batches of row indices, longest rows first.

    `batch_size` alone gives fixed-size batches; otherwise batches fill a token budget
    (`batch_tokens` or the backend's default), counted as padded rows x longest row, or as
    real tokens for a packed backend, with `batch_size` capping the rows; a packed backend's batches
    that run side by side on its workers are cut to about equal tokens.
    """
    order = length_order(lengths)
    if batch_size is not None and batch_tokens is None:
        return fixed_batches(order, batch_size)
    budget = batch_tokens or backend.default_batch_tokens
    rows = batch_size or backend.max_rows
    if backend.packed:  # batches that run side by side get equal tokens (vectors/batching.py packed_batches)
        return packed_batches(order, lengths, budget, rows, lane_workers(backend.workers))
    return token_batches(order, lengths, budget, rows)


def embed_rows(
    backend: Backend,
    ids: Sequence[Sequence[int]],
    dimension: int,
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    show_progress: bool | None = None,
    skip: int = 0,
) -> np.ndarray:
    """float32 (len(ids), dimension): row i embeds ids[i], whatever order the batches ran in.

    `skip` > 0: the first `skip` positions of every row (its prompt) stay out of pooling.
    """
    return embed_windows(
        backend, [Window(0, ids, [])], len(ids), dimension, batch_size, batch_tokens, show_progress, skip
    )


def embed_windows(
    backend: Backend,
    windows: Iterable[Window],
    n_rows: int,
    dimension: int,
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    show_progress: bool | None = None,
    skip: int = 0,
) -> np.ndarray:
    """float32 (n_rows, dimension) from streamed windows (vectors/token_stream.py): row i embeds corpus row i.

    Each window is ordered and batched as `embed_rows` batches a whole corpus, and runs while the
    tokenizer threads work on the next windows; a row's vector does not depend on its batch.
    """
    # A NumPy buffer: filling it runs no torch op, whose OpenMP threads would otherwise
    # spin against ONNX Runtime's (measured: 13% of the int8 backend's time).
    buffer = np.empty((n_rows, dimension), dtype=np.float32)
    show = n_rows >= PROGRESS_MIN_SENTENCES if show_progress is None else show_progress
    with tqdm(total=n_rows, unit="sent", disable=not show) as bar:
        for window in windows:
            batches = plan_batches(backend, [len(row) for row in window.ids], batch_size, batch_tokens)
            for rows, vectors in backend.run(window.ids, batches, skip):
                buffer[np.asarray(rows, dtype=np.int64) + window.start] = vectors
                bar.update(len(rows))
    return buffer


def embed_streamed(
    backend: Backend,
    tokenize: Tokenize,
    texts: Sequence[str],
    dimension: int,
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    show_progress: bool | None = None,
    skip: int = 0,
    **stream: int,
) -> tuple[np.ndarray, list[int]]:
    """`embed_rows` for texts not yet tokenized: float32 (len(texts), dimension) and the indices `tokenize` cut.

    Tokenizer threads work ahead (vectors/token_stream.py) while the backend embeds the windows already done;
    `stream`: token_windows' threads, chunk and window sizes (defaults: every core, 512, 8192).
    """
    cut: list[int] = []

    def noted(windows: Iterable[Window]) -> Iterator[Window]:
        for window in windows:
            cut.extend(window.cut)
            yield window

    windows = noted(token_windows(tokenize, texts, **stream))
    return embed_windows(backend, windows, len(texts), dimension, batch_size, batch_tokens, show_progress, skip), cut
