"""MaxSim (late interaction, ColBERT): for each query token the best dot product over a document's tokens, summed.

    maxsim(Q, D)     = sum_i max_j  q_i . d_j          Q: (n_q, dim), D: (n_d, dim)
    meanmaxsim(Q, D) = maxsim(Q, D) / n_q

A document with no scored token (all skiplist, or empty) gets EMPTY_DOCUMENT_SCORE, as
sentence-transformers 6 gives it: it ranks last even where real scores are negative.

A set of token matrices is held packed: one (total_tokens, dim) array and the offsets where each
matrix starts (`TokenSets`), so a corpus costs its real tokens and no padding. Scoring is exact
and memory-bounded: a block of queries meets a block of documents at a time, the intermediate
(query tokens x document tokens) kept under `budget` floats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sbert.vectors.token_codes import ResidualCodec, decode_rows, encode_rows

MULTI_VECTOR_SIMILARITIES = ("maxsim", "meanmaxsim")
# Floats in one (query tokens, document tokens) block: 32M float32 = 128 MB.
DEFAULT_BUDGET = 32 * 1024 * 1024
# sentence-transformers' score for a document with no token (before the mean divides it): below any real
# MaxSim, and, unlike the float32 minimum, still finite once a loss scales or squares it.
EMPTY_DOCUMENT_SCORE = -1e9
DOC_BLOCK_TOKENS = 4_096  # int8 / binary / residual document tokens decoded and scored at a time, at most


def check_multi_similarity(name: str | None) -> str:
    """The canonical name of a multi-vector score (None: maxsim); PyLate writes "MaxSim"."""
    canonical = "maxsim" if name is None else str(name).lower()
    if canonical not in MULTI_VECTOR_SIMILARITIES:
        raise ValueError(f"unknown multi-vector similarity {name!r}; known: {', '.join(MULTI_VECTOR_SIMILARITIES)}")
    return canonical


@dataclass(frozen=True)
class TokenSets:
    """Token matrices packed end to end: matrix i is `tokens[offsets[i]:offsets[i + 1]]`.

    `tokens` may be compact (vectors/token_codes.py): float16, int8 codes with `scales`, packed
    bits of `dim` dimensions, or residual buckets of centroid `ids` under `codec`; `rows` and
    `matrix` give float32 whatever the format.
    """

    tokens: np.ndarray  # (total_tokens, dim) float32 / float16 / int8, or (total_tokens, dim / 8) uint8 bits
    offsets: np.ndarray  # (n + 1,) int64, offsets[0] == 0
    scales: np.ndarray | None = None  # (total_tokens,) float32: int8 codes only
    dim: int | None = None  # the vectors' width where `tokens` holds bits (8 to a byte)
    ids: np.ndarray | None = None  # (total_tokens,) int32 centroid ids: residual tokens only
    codec: ResidualCodec | None = None  # how residual tokens decode

    @classmethod
    def pack(cls, matrices: Sequence[np.ndarray], dim: int | None = None) -> TokenSets:
        """Pack (n_i, dim) matrices; `dim` is needed only when there are none."""
        lengths = np.fromiter((len(m) for m in matrices), dtype=np.int64, count=len(matrices))
        offsets = np.zeros(len(matrices) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if not matrices:
            return cls(np.zeros((0, dim or 0), dtype=np.float32), offsets)
        tokens = np.concatenate([np.asarray(m, dtype=np.float32).reshape(-1, matrices[0].shape[-1]) for m in matrices])
        return cls(tokens, offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        """Tokens per matrix, (n,)."""
        return np.diff(self.offsets)

    @property
    def width(self) -> int:
        """The token vectors' dimension (not the bytes a packed row holds)."""
        if self.codec is not None:
            return int(self.codec.centroids.shape[1])
        return int(self.dim) if self.dim is not None else int(self.tokens.shape[1])

    @property
    def token_format(self) -> str:
        """float32, float16, int8, binary or residual."""
        if self.codec is not None:
            return "residual"
        return {np.dtype(np.uint8): "binary", np.dtype(np.int8): "int8", np.dtype(np.float16): "float16"}.get(
            self.tokens.dtype, "float32"
        )

    def rows(self, start: int, end: int) -> np.ndarray:
        """float32 (end - start, dim): token rows start..end of the packing, decoded from any format."""
        if self.codec is not None:
            assert self.ids is not None, "residual tokens need their centroid ids"
            return self.codec.decode(np.asarray(self.tokens[start:end]), np.asarray(self.ids[start:end]))
        scales = self.scales[start:end] if self.scales is not None else None
        return decode_rows(self.tokens[start:end], scales, self.width)

    def matrix(self, i: int) -> np.ndarray:
        """Matrix i as float32, (n_i, dim)."""
        return self.rows(int(self.offsets[i]), int(self.offsets[i + 1]))

    def compact(self, token_format: str) -> TokenSets:
        """The same matrices in `token_format` (float32, float16, int8 or binary); from float32 rows only."""
        codes, scales = encode_rows(self.rows(0, len(self.tokens)), token_format)
        return TokenSets(codes, self.offsets, scales, self.width if token_format == "binary" else None)

    @property
    def nbytes(self) -> int:
        """Bytes the token storage holds (codes, scales and centroid ids; not the offsets nor a codec's centroids)."""
        extra = sum(a.nbytes for a in (self.scales, self.ids) if a is not None)
        return int(self.tokens.nbytes + extra)

    def subset(self, rows: np.ndarray) -> TokenSets:
        """The matrices at `rows`, packed anew in that order (one gather, no Python loop)."""
        rows = np.asarray(rows, dtype=np.int64)
        counts = self.lengths[rows]
        first = np.cumsum(counts) - counts  # where each matrix starts in the new packing
        gather = np.arange(int(counts.sum())) - np.repeat(first, counts) + np.repeat(self.offsets[rows], counts)
        scales = self.scales[gather] if self.scales is not None else None
        ids = self.ids[gather] if self.ids is not None else None
        offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
        return TokenSets(np.asarray(self.tokens[gather]), offsets, scales, self.dim, ids, self.codec)


def _as_sets(x: TokenSets | Sequence[np.ndarray]) -> TokenSets:
    return x if isinstance(x, TokenSets) else TokenSets.pack(list(x))


def _segment_max(scores: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(rows, n_segments): the max of each row over each column segment; 0 for an empty segment."""
    out = np.zeros((scores.shape[0], len(starts)), dtype=np.float32)
    full = lengths > 0
    if full.any():
        # reduceat over non-empty segments only (an empty one would read its neighbour's first column)
        out[:, full] = np.maximum.reduceat(scores, starts[full], axis=1)
    return out


def _segment_sum(rows: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(n_segments, cols): the sum of each row segment; 0 for an empty segment."""
    out = np.zeros((len(starts), rows.shape[1]), dtype=np.float32)
    full = lengths > 0
    if full.any():
        out[full] = np.add.reduceat(rows, starts[full], axis=0)
    return out


def maxsim_matrix(
    queries: TokenSets | Sequence[np.ndarray], documents: TokenSets | Sequence[np.ndarray],
    mean: bool = False, budget: int = DEFAULT_BUDGET,
) -> np.ndarray:  # fmt: skip
    """float32 (n_queries, n_documents): MaxSim (or MeanMaxSim) of every query with every document."""
    q, d = _as_sets(queries), _as_sets(documents)
    out = np.zeros((len(q), len(d)), dtype=np.float32)
    if len(q) == 0 or len(d) == 0:
        return out
    q_len = q.lengths
    for q0, q1 in _blocks(q.offsets, budget // max(int(d.lengths.max()), 1)):
        block = q.rows(int(q.offsets[q0]), int(q.offsets[q1]))
        q_starts = q.offsets[q0:q1] - q.offsets[q0]
        # The decoded document rows (tokens x dim floats) count against the budget too, not only the scores.
        # Codes that decode through temporaries (int8 scales, bits, residuals) go in cache-sized blocks:
        # one query over 800,502 int8 tokens ran 9.35 against 7.37 queries/s with 4,096-token blocks, where
        # float16 rows (one cast) ran slower so (4.35 against 4.93), so they keep the budget's blocks
        # (benchmarks/speed/maxsim_blocks.py, medians of 3 alternating rounds, 2-core AMD EPYC).
        cap = DOC_BLOCK_TOKENS if d.token_format in ("int8", "binary", "residual") else budget
        doc_tokens = min(budget // max(len(block), d.width), cap)
        for d0, d1 in _blocks(d.offsets, max(doc_tokens, 1)):
            base = d.offsets[d0]
            scores = block @ d.rows(int(base), int(d.offsets[d1])).T  # (q tokens, d tokens)
            best = _segment_max(scores, d.offsets[d0:d1] - base, d.lengths[d0:d1])  # (q tokens, docs)
            out[q0:q1, d0:d1] = _segment_sum(best, q_starts, q_len[q0:q1])  # sum over each query's tokens
    out[:, d.lengths == 0] = EMPTY_DOCUMENT_SCORE
    if mean:
        out /= np.maximum(q_len, 1)[:, None]
    return out


def maxsim_pairs(
    queries: TokenSets | Sequence[np.ndarray], documents: TokenSets | Sequence[np.ndarray], mean: bool = False
) -> np.ndarray:
    """float32 (n,): MaxSim of query i with document i."""
    q, d = _as_sets(queries), _as_sets(documents)
    if len(q) != len(d):
        raise ValueError(f"pairwise MaxSim needs as many queries as documents, got {len(q)} and {len(d)}")
    out = np.zeros(len(q), dtype=np.float32)
    for i in range(len(q)):
        qi, di = q.matrix(i), d.matrix(i)
        if not len(di):
            out[i] = EMPTY_DOCUMENT_SCORE
        elif len(qi):
            out[i] = (qi @ di.T).max(axis=1).sum()
    if mean:
        out /= np.maximum(q.lengths, 1)
    return out


def _blocks(offsets: np.ndarray, max_tokens: int) -> list[tuple[int, int]]:
    """Runs [i, j) of consecutive matrices holding at most `max_tokens` tokens (at least one matrix each)."""
    runs, start, n = [], 0, len(offsets) - 1
    while start < n:
        # the furthest end whose token count fits, found by bisection on the offsets
        end = int(np.searchsorted(offsets, offsets[start] + max(max_tokens, 1), side="right")) - 1
        end = min(max(end, start + 1), n)
        runs.append((start, end))
        start = end
    return runs
