"""Token-budget buckets for replaying the packed forward from captured CUDA graphs (backends/cuda_graphs.py).

A CUDA graph replays fixed shapes, a packed batch has its own: so a handful of shapes is planned per model
(the engine's token budget, then halves of it), each with room for a quarter as many rows as tokens and
the model's longest row. A batch takes the smallest bucket it fits, padded to the bucket's shape by filler
rows (a token at least each, no longer than the bucket's longest row, so the attention kernel sees only
well-formed sequences); the fillers' vectors are dropped. A batch that fits none (a very long one, or one
of mostly one-token rows) runs eagerly. No torch here: the plan is the same on every machine, and tested
on the CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

BUCKETS = 4  # graphs per model: each costs a capture (a forward) and its activation memory
SMALLEST = 256  # tokens: below this a batch is cheap enough eagerly
ROWS_PER_TOKEN = 4  # a bucket holds tokens // 4 rows: sentences of 4+ tokens on average fill it


@dataclass(frozen=True)
class Bucket:
    """One captured shape: packed tokens, rows (cu_seqlens has rows + 1 entries) and the longest row."""

    tokens: int
    rows: int
    max_len: int


@dataclass(frozen=True)
class Fitted:
    """A batch's bucket and the lengths of the filler rows that pad it to the bucket's shape."""

    bucket: Bucket
    fillers: tuple[int, ...]


def plan_buckets(budget: int, max_rows: int, max_len: int, count: int = BUCKETS) -> tuple[Bucket, ...]:
    """Up to `count` buckets, smallest first: the token budget and its halves, down to SMALLEST tokens."""
    sizes: list[int] = []
    tokens = budget
    while len(sizes) < count and tokens >= SMALLEST:
        sizes.append(tokens)
        tokens //= 2
    return tuple(Bucket(t, max(1, min(max_rows, t // ROWS_PER_TOKEN)), max_len) for t in reversed(sizes))


def fit(buckets: Sequence[Bucket], lengths: Sequence[int]) -> Fitted | None:
    """The smallest bucket a batch of rows of `lengths` fits, with its fillers; None: run it eagerly."""
    for bucket in buckets:
        fillers = filler_lengths(bucket, lengths)
        if fillers is not None:
            return Fitted(bucket, fillers)
    return None


def filler_lengths(bucket: Bucket, lengths: Sequence[int]) -> tuple[int, ...] | None:
    """Lengths of the rows that pad a batch to `bucket` exactly (each in 1..max_len), or None if none can."""
    if not lengths or max(lengths) > bucket.max_len or len(lengths) > bucket.rows:
        return None
    rows, tokens = bucket.rows - len(lengths), bucket.tokens - sum(lengths)
    if rows == 0:
        return () if tokens == 0 else None
    if not rows <= tokens <= rows * bucket.max_len:
        return None
    base, extra = divmod(tokens, rows)  # as even as they come: the first `extra` rows one token longer
    return tuple(base + 1 if i < extra else base for i in range(rows))


def padded_rows(rows: Sequence[Sequence[int]], fillers: Sequence[int], filler_id: int) -> list[Sequence[int]]:
    """The batch's rows, then one filler row of `filler_id` per filler length (packed after the real rows)."""
    return [*rows, *([filler_id] * n for n in fillers)]
