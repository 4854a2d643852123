"""Compact token matrices for late interaction: float16, int8 with a scale per token, or one bit a dimension.

    float16: the vector in half precision                       2 bytes a dimension
    int8:    codes c = round(x / s * 127), s = max_i |x_i|        1 byte a dimension + 4 bytes a token
             (each token's own scale, so a short vector keeps its resolution); x ~ c * s / 127
    binary:  bits (x > 0), packed 8 to a byte (numpy.packbits)  1 bit a dimension
             x ~ (2 * bit - 1) / sqrt(dim): the sign pattern at unit length

    residual: a centroid id and `bits` a dimension (ResidualCodec: PLAID / ColBERTv2's compression,
             built by the index, which holds the centroids)

Scoring reads a compact set block by block (`decode_rows`), so a corpus stays compact in memory
and only the block being scored is float32. Binary codes find candidates; the rescoring path
(`search.multivector_index`, or `maxsim_matrix` on float rows of the candidates) puts them in order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TOKEN_FORMATS = ("float32", "float16", "int8", "binary")
RESIDUAL_BITS = (1, 2, 4)


def check_token_format(name: str) -> str:
    """`name` if it is a known token format, else a one-line ValueError naming them."""
    if name not in TOKEN_FORMATS:
        raise ValueError(f"token_format={name!r}: known {', '.join(TOKEN_FORMATS)}")
    return name


def encode_rows(tokens: np.ndarray, fmt: str) -> tuple[np.ndarray, np.ndarray | None]:
    """float32 (n, dim) token vectors as `fmt` codes, and the per-token scales int8 needs (else None)."""
    x = np.asarray(tokens, dtype=np.float32)
    if check_token_format(fmt) == "float32":
        return x, None
    if fmt == "float16":
        return x.astype(np.float16), None
    if fmt == "binary":
        return np.packbits(x > 0, axis=-1), None
    scales = np.abs(x).max(axis=-1) if len(x) else np.zeros(0, np.float32)  # (n,)
    safe = np.where(scales > 0, scales, 1.0)[:, None]
    codes = np.clip(np.rint(x / safe * 127.0), -127, 127).astype(np.int8)
    return codes, scales.astype(np.float32)


def decode_rows(codes: np.ndarray, scales: np.ndarray | None, dim: int) -> np.ndarray:
    """float32 (n, dim) from a block of codes in any token format (the format is read from the dtype)."""
    if codes.dtype == np.uint8:  # binary: signs at unit length
        bits = np.unpackbits(codes, axis=-1, count=dim).astype(np.float32)
        return (2.0 * bits - 1.0) / np.float32(np.sqrt(dim))
    if codes.dtype == np.int8:
        assert scales is not None, "int8 token codes need their scales"
        return codes.astype(np.float32) * (scales[:, None] / np.float32(127.0))
    return codes.astype(np.float32, copy=False)


@dataclass(frozen=True)
class ResidualCodec:
    """PLAID / ColBERTv2 residual compression: a token as its centroid plus a few bits a dimension.

        x ~ normalize(c[id] + w[b]),  b_j = bucket of (x - c[id])_j among `cutoffs`   (2**bits buckets)

    `cutoffs` and `weights` are global (every dimension shares them), as in ColBERTv2: the cutoffs
    are quantiles of all residual entries, each bucket's weight the quantile at its middle.
    """

    centroids: np.ndarray  # (k, dim) float32
    cutoffs: np.ndarray  # (2**bits - 1,) float32, ascending
    weights: np.ndarray  # (2**bits,) float32
    bits: int = 2

    @classmethod
    def fit(cls, tokens: np.ndarray, ids: np.ndarray, centroids: np.ndarray, bits: int = 2) -> ResidualCodec:
        """The codec for `tokens` (a sample is enough) assigned to `centroids` by `ids`."""
        if bits not in RESIDUAL_BITS:
            raise ValueError(f"residual bits={bits}: use one of {RESIDUAL_BITS}")
        residual = (np.asarray(tokens, np.float32) - centroids[ids]).ravel()
        levels = 2**bits
        cutoffs = np.quantile(residual, np.arange(1, levels) / levels).astype(np.float32)
        weights = np.quantile(residual, (np.arange(levels) + 0.5) / levels).astype(np.float32)
        return cls(np.asarray(centroids, np.float32), cutoffs, weights, bits)

    def encode(self, tokens: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """uint8 (n, dim * bits / 8): each residual entry's bucket, packed 8 / bits to a byte."""
        residual = np.asarray(tokens, np.float32) - self.centroids[ids]
        buckets = np.searchsorted(self.cutoffs, residual).astype(np.uint8)  # (n, dim) in [0, 2**bits)
        per_byte = 8 // self.bits
        shifts = (np.arange(per_byte, dtype=np.uint8) * self.bits).astype(np.uint8)
        grouped = buckets.reshape(len(buckets), -1, per_byte) << shifts
        return np.bitwise_or.reduce(grouped, axis=-1).astype(np.uint8)

    def decode(self, packed: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """float32 (n, dim) unit vectors back from packed buckets and centroid ids."""
        per_byte = 8 // self.bits
        shifts = (np.arange(per_byte, dtype=np.uint8) * self.bits).astype(np.uint8)
        buckets = ((packed[..., None] >> shifts) & np.uint8(2**self.bits - 1)).reshape(len(packed), -1)
        x = self.centroids[ids] + self.weights[buckets]
        return (x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)).astype(np.float32)
