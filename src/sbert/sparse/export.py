"""Sparse vectors as the search engines ingest them, one JSON object per line.

- qdrant: `{"id": i, "vector": {NAME: {"indices": [...], "values": [...]}}}` (a named sparse vector);
- opensearch: `{"id": i, FIELD: {token: weight, ...}}` (a `rank_features` field; tokens decoded,
  CSR dimensions as their numbers);
- elasticsearch: the same shape as opensearch (a `sparse_vector` field takes token -> weight).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from typing import Any, cast

import scipy.sparse


@functools.cache
def _json_writer() -> Callable[[dict[str, Any]], bytes]:
    """Orjson's dumps (the serve extra) where installed, several times faster; else the standard library's.

    Decided once: a failed import per record would search the path again for every line written.
    """
    try:
        import orjson
    except ImportError:  # the run install: the standard library writes the same JSON
        return lambda record: json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()
    return cast(Callable[[dict[str, Any]], bytes], orjson.dumps)


def csr_rows(vectors: scipy.sparse.spmatrix) -> Iterator[tuple[list[int], list[float]]]:
    """Each row's active dimensions and weights, by dimension."""
    rows = scipy.sparse.csr_matrix(vectors)
    rows.sort_indices()
    for i in range(rows.shape[0]):
        begin, end = rows.indptr[i], rows.indptr[i + 1]
        yield rows.indices[begin:end].tolist(), rows.data[begin:end].tolist()


def sparse_records(
    vectors: scipy.sparse.csr_matrix, fmt: str, start: int = 0, name: str = "sparse",
    token: Callable[[int], str] = str,
) -> Iterator[bytes]:  # fmt: skip
    """One JSON line per row of `vectors` (ids from `start`), in the engine format `fmt`."""
    dumps = _json_writer()
    for i, (indices, values) in enumerate(csr_rows(vectors)):
        if fmt == "qdrant":
            record: dict[str, Any] = {"id": start + i, "vector": {name: {"indices": indices, "values": values}}}
        else:
            record = {"id": start + i, name: {token(j): v for j, v in zip(indices, values, strict=True)}}
        yield dumps(record) + b"\n"
