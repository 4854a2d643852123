"""The quantized index kinds: int8 (FAISS scalar quantizer) and binary (FAISS binary flat or HNSW, Hamming).

Codes take 1 byte (int8) or 1 bit (binary) a dimension instead of 4, so the index held in memory is
4x or 32x smaller. Their scores are approximate, so the top `rescore x k` candidates are scored
again with the full float32 vectors, read from `vectors.npy` through a memory map: only the
candidates' rows are ever read from disk. int8's calibration ranges (per-dimension min and max of
the corpus vectors) are saved as `ranges.npy` and are exactly the ranges FAISS quantizes with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sbert.errors import SbertError
from sbert.install_hint import install_hint
from sbert.search.quantize import calibration_ranges, quantize_embeddings

QUANTIZED_KINDS = ("int8", "binary", "binary-hnsw")
BINARY_KINDS = ("binary", "binary-hnsw")
VECTORS_FILE, RANGES_FILE = "vectors.npy", "ranges.npy"
# Candidates per wanted hit that the full vectors rescore. On 1M MiniLM vectors
# (benchmarks/speed/quantized_search.py) int8 found 99.98% of the exact top 10 at 4; binary 81% at 4,
# 89% at 10 in the same 5 ms a query, 94% at 25.
RESCORE = 4
RESCORE_BY_KIND = {"int8": 4, "binary": 10, "binary-hnsw": 10}
BINARY_HNSW_M, BINARY_EF_SEARCH = 32, 256
_CHUNK = 100_000


def faiss_module() -> Any:
    """FAISS, or a one-line error naming the extra that installs it."""
    try:
        import faiss
    except ImportError:
        raise SbertError(f"the index needs FAISS: {install_hint('index')}") from None
    return faiss


def new_quantized(kind: str, unit: np.ndarray) -> tuple[Any, np.ndarray | None]:
    """A FAISS index of `kind` holding the unit vectors' codes, and int8's calibration ranges (else None)."""
    faiss = faiss_module()
    dim = unit.shape[1]
    if kind in BINARY_KINDS:
        if dim % 8:
            raise SbertError(f"a binary index needs a dimension divisible by 8, got {dim}")
        index = faiss.IndexBinaryFlat(dim) if kind == "binary" else faiss.IndexBinaryHNSW(dim, BINARY_HNSW_M)
        for start in range(0, len(unit), _CHUNK):
            index.add(quantize_embeddings(unit[start : start + _CHUNK], "ubinary"))
        return index, None
    ranges = calibration_ranges(unit)
    index = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
    # QT_8bit keeps [min (d), max - min (d)]: set from our ranges instead of FAISS's own training.
    faiss.copy_array_to_vector(np.concatenate([ranges[0], np.maximum(ranges[1] - ranges[0], 1e-12)]), index.sq.trained)
    index.is_trained = True
    for start in range(0, len(unit), _CHUNK):
        index.add(unit[start : start + _CHUNK])
    return index, ranges


def write_vectors(path: Path, vectors: np.ndarray, unit: Any) -> None:
    """The unit float32 vectors as a .npy file, written a chunk at a time (never two full copies in memory)."""
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=vectors.shape)
    for start in range(0, len(vectors), _CHUNK):
        out[start : start + _CHUNK] = unit(vectors[start : start + _CHUNK])
    out.flush()
    del out


def write_any(index: Any, path: Path) -> None:
    """Write a float or binary FAISS index."""
    faiss = faiss_module()
    (faiss.write_index_binary if isinstance(index, faiss.IndexBinary) else faiss.write_index)(index, str(path))


def read_any(path: Path, kind: str) -> Any:
    """Read a float or binary FAISS index (RuntimeError when unreadable)."""
    faiss = faiss_module()
    if kind in BINARY_KINDS:
        index = faiss.read_index_binary(str(path))
        if kind == "binary-hnsw":
            index.hnsw.efSearch = BINARY_EF_SEARCH
        return index
    return faiss.read_index(str(path))


def search_quantized(
    index: Any, kind: str, queries: np.ndarray, top_k: int, vectors: np.ndarray | None, rescore: int
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k (scores, ids) of unit queries: the codes' best `rescore x top_k`, rescored by cosine when vectors exist.

    Without vectors the codes' own order and scores come back: int8's approximate inner product, or
    for binary codes 1 - 2h/d for h differing bits of d (the fraction of agreeing signs, on cosine's scale).
    """
    count = int(index.ntotal)
    depth = min(count, top_k * max(rescore, 1)) if vectors is not None else min(count, top_k)
    if kind in BINARY_KINDS:
        hamming, ids = index.search(quantize_embeddings(queries, "ubinary"), depth)
        scores = (1 - 2 * hamming / queries.shape[1]).astype(np.float32)
    else:
        scores, ids = index.search(queries, depth)
    if vectors is None:
        return scores, ids
    return rescore_hits(queries, ids, vectors, min(top_k, count))


def rescore_hits(
    queries: np.ndarray, ids: np.ndarray, vectors: np.ndarray, top_k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Cosine of each query with its candidates' full vectors (read once, in file order), best `top_k` first."""
    wanted = np.unique(ids[ids >= 0])
    block = np.asarray(vectors[wanted], dtype=np.float32)  # a memory map reads only these rows
    where = {int(r): i for i, r in enumerate(wanted)}
    out_s = np.full((len(ids), top_k), -np.inf, dtype=np.float32)
    out_i = np.full((len(ids), top_k), -1, dtype=np.int64)
    for q, row in enumerate(ids):
        row = row[row >= 0]
        exact = block[[where[int(r)] for r in row]] @ queries[q]
        best = np.argsort(-exact, kind="stable")[:top_k]
        out_s[q, : len(best)], out_i[q, : len(best)] = exact[best], row[best]
    return out_s, out_i


def index_bytes(index: Any) -> int:
    """Bytes of the index's serialized form: what it holds in memory, codes and graph."""
    faiss = faiss_module()
    if isinstance(index, faiss.IndexBinary):
        return int(faiss.serialize_index_binary(index).nbytes)
    return int(faiss.serialize_index(index).nbytes)
