"""SDPA for packed batches on the CPU: the sequences laid into padded grids, one grid per length bucket.

One grid as wide as the batch's longest sequence makes attention pay for every sequence as if it were
that long, and attention grows with the square of the width: batches of a server's merged groups of random
short texts (lengths 6 to 40) spent 7.0-8.5% of their CPU in attention on one grid, 5.9-6.1% in buckets,
offline's length-sorted batches 6.4-7.9% (benchmarks/speed/grid_attention.py). Sequences of like length
share a grid here, so each pays for about its own length. Where a bucket's tokens lie end to end in the
packed row (the backends sort a batch longest first) they are sliced, not gathered. The plan is made once
per batch on the host and kept for its layers.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor
from torch.nn import functional

from sbert.backends.packing import restart_positions

# A sequence shorter than this share of its bucket's longest starts a new bucket: attention in a bucket then
# wastes at most 1 - 0.75^2 = 44% of a row's area, against up to 97% in one grid (lengths 6 against 40).
BUCKET_RATIO = 0.75
# Each bucket costs a few small ops per layer (grids for q, k and v, the scatter back): a bound on them.
MAX_BUCKETS = 4


@dataclass(frozen=True)
class Bucket:
    """Sequences laid into one (rows, width) grid: where their tokens are and which grid cells they fill."""

    tokens: Tensor  # (n,) int64: the bucket's tokens' places in the packed row, in grid order
    cells: Tensor  # (n,) int64: each of those tokens' cell in the flattened (rows * width) grid
    rows: int
    width: int
    mask: Tensor | None  # (rows, 1, 1, width) bool: the keys each row attends to; None when every row fills it
    start: int | None  # the first token when the bucket's tokens lie end to end in the packed row, else None


def length_groups(lengths: np.ndarray) -> list[np.ndarray]:
    """Sequence indices, longest first, cut where a length falls under BUCKET_RATIO of its group's longest.

    At most MAX_BUCKETS groups: past that the rest share the last one.
    """
    order = np.argsort(-lengths, kind="stable")
    groups: list[list[int]] = [[]]
    for i in order.tolist():
        head = groups[-1]
        if head and lengths[i] < BUCKET_RATIO * lengths[head[0]] and len(groups) < MAX_BUCKETS:
            groups.append([])
        groups[-1].append(i)
    return [np.asarray(g, dtype=np.int64) for g in groups]


def make_bucket(rows: np.ndarray, starts: np.ndarray, lengths: np.ndarray, masked: bool) -> Bucket:
    """The grid of sequences `rows` (longest first): their token places, cells and key mask."""
    lens = lengths[rows]
    width = int(lens[0])
    row_of = np.repeat(np.arange(len(rows)), lens)  # each token's row in the grid
    position = restart_positions(lens)
    tokens = np.repeat(starts[rows], lens) + position
    first = int(tokens[0])
    contiguous = bool(np.array_equal(tokens, np.arange(first, first + len(tokens))))
    mask = None
    if masked and bool((lens != width).any()):
        mask = torch.from_numpy(np.arange(width)[None, :] < lens[:, None])[:, None, None, :]
    cells = torch.from_numpy(row_of * width + position)
    return Bucket(torch.from_numpy(tokens), cells, len(rows), width, mask, first if contiguous else None)


def plan_buckets(cu: Tensor, causal: bool) -> list[Bucket]:
    """The buckets of a packed batch from its cumulative lengths (a host tensor).

    Causal attention needs no key mask: with right padding a token's earlier keys are all real.
    """
    bounds = cu.numpy().astype(np.int64)
    lengths = np.diff(bounds)
    return [make_bucket(rows, bounds[:-1], lengths, not causal) for rows in length_groups(lengths)]


# One plan per thread (the CPU backend runs a batch per core at a time), kept while its layers run.
_HELD = threading.local()


def held_plan(cu: Tensor, causal: bool) -> list[Bucket]:
    """The buckets for this batch: planned on its first layer, then reused while the same `cu` comes back.

    The plan holds `cu` itself, so an identity match cannot be a new tensor at a recycled address.
    """
    held = getattr(_HELD, "plan", None)
    if held is None or held[0] is not cu or held[1] != causal:
        held = _HELD.plan = (cu, causal, plan_buckets(cu, causal))
    return held[2]


def bucketed_sdpa(q: Tensor, k: Tensor, v: Tensor, cu: Tensor, scale: float | None, causal: bool) -> Tensor:
    """Attention of packed (N, heads, d) rows, each bucket of like-length sequences on its own grid."""
    out = torch.empty_like(q)
    for bucket in held_plan(cu, causal):
        count = bucket.tokens.shape[0]

        def grid(x: Tensor, b: Bucket = bucket, n: int = count) -> Tensor:  # (N, h, d) -> (rows, h, width, d)
            part = x.narrow(0, b.start, n) if b.start is not None else x.index_select(0, b.tokens)
            cells = x.new_zeros((b.rows * b.width, *x.shape[1:]))
            cells.index_copy_(0, b.cells, part)
            return cells.view(b.rows, b.width, *x.shape[1:]).transpose(1, 2)

        attended = functional.scaled_dot_product_attention(grid(q), grid(k), grid(v), attn_mask=bucket.mask,
                                                           scale=scale, is_causal=causal)  # fmt: skip
        flat = attended.transpose(1, 2).reshape(bucket.rows * bucket.width, *q.shape[1:])
        rows = flat.index_select(0, bucket.cells)
        if bucket.start is not None:
            out.narrow(0, bucket.start, count).copy_(rows)
        else:
            out.index_copy_(0, bucket.tokens, rows)
    return out
