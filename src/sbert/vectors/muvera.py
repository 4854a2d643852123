"""MUVERA fixed dimensional encodings (Dhulipala et al., 2024): one vector per token set.

Their dot product approximates MaxSim, so any dense index can generate candidates for an exact MaxSim rerank.

For each of `reps` repetitions, `bits` random hyperplanes (SimHash) cut the space into 2^bits
buckets; every token is projected to `proj` dims by a random +-1 matrix (scaled by 1/sqrt(proj)).
    query:    bucket b holds the SUM of its tokens' projections
    document: bucket b holds the MEAN; an empty bucket takes the token nearest to it in Hamming
              distance of the bucket codes (the paper's fill_empty_partitions)
The encoding concatenates every bucket of every repetition: reps * 2^bits * proj floats.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MuveraParams:
    """The encoding's shape and the seed of its random hyperplanes and projections."""

    dim: int  # token width
    bits: int = 4  # 2^bits buckets per repetition
    proj: int = 16  # projected width per bucket (== dim: no projection)
    reps: int = 16
    seed: int = 0

    @property
    def width(self) -> int:
        """Length of one encoding."""
        return self.reps * (1 << self.bits) * self.proj

    def draws(self) -> tuple[np.ndarray, np.ndarray]:
        """(hyperplanes (reps, dim, bits), projections (reps, dim, proj)), the same for every call."""
        rng = np.random.default_rng(self.seed)
        planes = rng.standard_normal((self.reps, self.dim, self.bits)).astype(np.float32)
        if self.proj == self.dim:
            proj = np.broadcast_to(np.eye(self.dim, dtype=np.float32), (self.reps, self.dim, self.dim)).copy()
        else:
            signs = rng.integers(0, 2, (self.reps, self.dim, self.proj)) * 2 - 1
            proj = (signs / np.sqrt(self.proj)).astype(np.float32)
        return planes, proj


def encode_queries(tokens: np.ndarray, offsets: np.ndarray, params: MuveraParams) -> np.ndarray:
    """float32 (n, width): bucket sums. Token set i is `tokens[offsets[i]:offsets[i + 1]]`."""
    return _encode(tokens, offsets, params, document=False)


def encode_documents(tokens: np.ndarray, offsets: np.ndarray, params: MuveraParams) -> np.ndarray:
    """float32 (n, width): bucket means, empty buckets filled from the nearest token."""
    return _encode(tokens, offsets, params, document=True)


def _encode(tokens: np.ndarray, offsets: np.ndarray, params: MuveraParams, document: bool) -> np.ndarray:
    n, buckets, lengths = len(offsets) - 1, 1 << params.bits, np.diff(offsets)
    out = np.zeros((n, params.reps, buckets, params.proj), dtype=np.float32)
    if n == 0 or len(tokens) == 0:
        return out.reshape(n, params.width)
    tokens = np.asarray(tokens, dtype=np.float32)
    owner = np.repeat(np.arange(n), lengths)  # (T,) the set of each token
    planes, projections = params.draws()
    weights = 1 << np.arange(params.bits)
    for r in range(params.reps):
        codes = ((tokens @ planes[r]) > 0).astype(np.int64) @ weights  # (T,) bucket of each token
        projected = tokens @ projections[r]  # (T, proj)
        slot = owner * buckets + codes
        sums = np.zeros((n * buckets, params.proj), dtype=np.float32)
        order = np.argsort(slot, kind="stable")  # a segment sum over sorted slots (np.add.at is far slower)
        used, first = np.unique(slot[order], return_index=True)
        sums[used] = np.add.reduceat(projected[order], first, axis=0)
        if document:
            counts = np.bincount(slot, minlength=n * buckets).astype(np.float32)
            sums /= np.maximum(counts, 1)[:, None]
            _fill_empty(sums, counts, codes, owner, projected, offsets, params.bits)
        out[:, r] = sums.reshape(n, buckets, params.proj)
    return out.reshape(n, params.width)


def _fill_empty(
    means: np.ndarray, counts: np.ndarray, codes: np.ndarray, owner: np.ndarray, projected: np.ndarray,
    offsets: np.ndarray, bits: int,
) -> None:  # fmt: skip
    """Give each empty (set, bucket) the projection of the set's token whose code is nearest in Hamming distance."""
    buckets, n = 1 << bits, len(offsets) - 1
    full = np.diff(offsets) > 0
    starts = offsets[:-1][full]
    for b in range(buckets):
        empty = (counts.reshape(n, buckets)[:, b] == 0) & full
        if not empty.any():
            continue
        distance = np.bitwise_count(np.bitwise_xor(codes, b)) if hasattr(np, "bitwise_count") else _popcount(codes ^ b)
        best = np.full(n, bits + 1, dtype=np.int64)
        best[full] = np.minimum.reduceat(distance, starts)
        hit = np.flatnonzero(distance == best[owner])  # tokens at their set's smallest distance
        first_sets, first_at = np.unique(owner[hit], return_index=True)  # the first such token per set
        chosen = np.zeros(n, dtype=np.int64)
        chosen[first_sets] = hit[first_at]
        rows = np.flatnonzero(empty)
        means[rows * buckets + b] = projected[chosen[rows]]


def _popcount(x: np.ndarray) -> np.ndarray:
    count = np.zeros_like(x)
    while x.any():
        count += x & 1
        x = x >> 1
    return count
