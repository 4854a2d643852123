"""SDPA for packed batches on the CPU: the sequences laid into padded grids, one grid per length bucket.

One grid as wide as the batch's longest sequence makes attention pay for every sequence as if it were
that long, and attention grows with the square of the width: batches of a server's merged groups of random
short texts (lengths 6 to 40) spent 7.0-8.5% of their CPU in attention on one grid, 5.9-6.1% in buckets,
offline's length-sorted batches 6.4-7.9% (benchmarks/speed/grid_attention.py). Sequences of like length
share a grid here, so each pays for about its own length. A grid is one gather from the packed rows (a pad
cell repeats a real token of its row, which the key mask or causal order keeps out of every real token's
attention), and the output one gather back: no zero-filled grid, no scatter. Where a bucket's tokens lie end
to end in the packed row (the backends sort a batch longest first) and no row is padded, its grid is a view.
The plan is made once per batch on the host and kept for its layers. A grid a little narrower than a
multiple of the CPU's float vector (`grid_width`) is widened to it: torch's CPU attention kernel runs the
remainder of each row of scores one float at a time.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor
from torch.nn import functional

from sbert.vectors.positions import restart_positions

# A sequence shorter than this share of its bucket's longest starts a new bucket: attention in a bucket then
# wastes at most 1 - 0.75^2 = 44% of a row's area, against up to 97% in one grid (lengths 6 against 40).
BUCKET_RATIO = 0.75
# Each bucket costs a few small ops per layer (gathers for q, k and v, the gather back): a bound on them.
MAX_BUCKETS = 4
# torch's CPU flash-attention kernel (what SDPA runs on a float grid) works through each row of scores in
# vectors of the CPU's floats and the remainder one float at a time (an exp each). Per capability: the vector's
# floats, and the remainder from which a grid is widened to the next multiple (the pad cells are masked keys
# and unread queries). MiniLM's shapes (12 heads of 64), ~480 tokens a bucket, one thread, 2-core AMD EPYC
# (Zen 4), `python benchmarks/speed/grid_width.py`: with AVX-512, widening 10 to 16 ran 1.3x faster, 13 2.0x,
# 15 2.5x, 27-31 to 32 1.4-1.9x, 17 to 32 0.5x, and 9 to 16 0.86x and 1.06x in two runs (kept); with AVX2
# (ATEN_CPU_CAPABILITY=avx2) 14 and 15 to 16 1.4x and 1.8x, 23 to 24 1.6x, 12 to 16 0.93x. Other capabilities
# keep the sequences' width.
WIDEN_FROM = {"AVX512": (16, 10), "AVX2": (8, 6)}


@dataclass(frozen=True)
class Bucket:
    """Sequences laid into one (rows, width) grid: which packed token fills each cell, and each token's cell."""

    tokens: Tensor  # (n,) int64: the bucket's tokens' places in the packed row, in grid order
    cells: Tensor  # (n,) int64: each of those tokens' cell in the flattened (rows * width) grid
    rows: int
    width: int
    mask: Tensor | None  # (rows, 1, 1, width) bool: the keys each row attends to; None when every row fills it
    start: int | None  # the first token when the bucket's tokens lie end to end in the packed row, else None
    fill: Tensor | None  # (rows * width,) int64: the packed token each cell reads; None when the grid is a view

    def grid(self, x: Tensor) -> Tensor:
        """Packed (N, heads, d) rows as this bucket's (rows, heads, width, d) grid: a gather, or a view."""
        if self.fill is None:
            assert self.start is not None
            cells = x.narrow(0, self.start, self.tokens.shape[0])
        else:
            cells = x.index_select(0, self.fill)
        return cells.view(self.rows, self.width, *x.shape[1:]).transpose(1, 2)


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


@functools.cache
def vector_rule() -> tuple[int, int] | None:
    """(floats a vector, remainder from which to widen) for the CPU kernels torch dispatches to here, or None."""
    return WIDEN_FROM.get(torch.backends.cpu.get_cpu_capability())


def grid_width(longest: int) -> int:
    """The width of a grid whose longest sequence is `longest`: that, or the next multiple of the CPU's vector."""
    rule = vector_rule()
    if rule is None:
        return longest
    floats, widen_from = rule
    return -(-longest // floats) * floats if longest % floats >= widen_from else longest


def make_bucket(rows: np.ndarray, starts: np.ndarray, lengths: np.ndarray, masked: bool) -> Bucket:
    """The grid of sequences `rows` (longest first): their token places, cells and key mask."""
    lens = lengths[rows]
    width = grid_width(int(lens[0]))
    row_of = np.repeat(np.arange(len(rows)), lens)  # each token's row in the grid
    position = restart_positions(lens)
    tokens = np.repeat(starts[rows], lens) + position
    first = int(tokens[0])
    contiguous = bool(np.array_equal(tokens, np.arange(first, first + len(tokens))))
    mask = None
    if masked and bool((lens != width).any()):
        mask = torch.from_numpy(np.arange(width)[None, :] < lens[:, None])[:, None, None, :]
    cells = row_of * width + position
    fill = None
    if not contiguous or len(tokens) != len(rows) * width:
        # each cell reads its own token, a pad cell its row's first (a real token: no NaN, masked out or unseen)
        fill = np.repeat(starts[rows], width)
        fill[cells] = tokens
    return Bucket(torch.from_numpy(tokens), torch.from_numpy(cells), len(rows), width, mask,
                  first if contiguous else None, None if fill is None else torch.from_numpy(fill))  # fmt: skip


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
    out = torch.empty_like(q, memory_format=torch.contiguous_format)
    track = torch.is_grad_enabled() and any(x.requires_grad for x in (q, k, v))
    for bucket in held_plan(cu, causal):
        attended = functional.scaled_dot_product_attention(
            bucket.grid(q), bucket.grid(k), bucket.grid(v), attn_mask=bucket.mask, scale=scale, is_causal=causal
        )
        # SDPA lays its output out as its query grid, (rows, width, heads, d): this is a view, not a copy
        flat = attended.transpose(1, 2).reshape(bucket.rows * bucket.width, *q.shape[1:])
        if bucket.start is not None and not track:
            torch.index_select(flat, 0, bucket.cells, out=out.narrow(0, bucket.start, bucket.tokens.shape[0]))
        elif bucket.start is not None:  # autograd refuses out= arguments
            out.narrow(0, bucket.start, bucket.tokens.shape[0]).copy_(flat.index_select(0, bucket.cells))
        else:
            out.index_copy_(0, bucket.tokens, flat.index_select(0, bucket.cells))
    return out
