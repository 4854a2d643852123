"""Exact search over sparse vectors (SPLADE): an inverted index that scores only documents sharing a query term.

Scores are dot products, as SPLADE defines them. The index stores the document matrix transposed
(one row of postings per vocabulary term, CSR), so a block of queries times it touches only the
postings of the queries' own terms. The brute-force product of every document row with the queries
(`sparse_search`) is the reference it is tested and measured against.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import numpy as np
import scipy.sparse

from sbert.errors import SbertError
from sbert.formats import layout

POSTINGS_FILE = "postings.npz"
_QUERY_BLOCK = 64  # queries scored together: bounds the (queries x touched documents) block


def _csr(vectors: object, width: int | None, what: str) -> scipy.sparse.csr_matrix:
    matrix = scipy.sparse.csr_matrix(vectors, dtype=np.float32)
    if width is not None and matrix.shape[1] != width:
        raise SbertError(f"{what} have {matrix.shape[1]} dimensions; the index has {width}")
    return matrix


def top_k_sparse_rows(scores: scipy.sparse.csr_matrix, top_k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's `top_k` largest stored scores, best first: (scores (q, k), indices (q, k)); short rows pad with -1."""
    values = np.full((scores.shape[0], top_k), -np.inf, dtype=np.float32)
    indices = np.full((scores.shape[0], top_k), -1, dtype=np.int64)
    for row in range(scores.shape[0]):
        start, end = scores.indptr[row], scores.indptr[row + 1]
        data, cols = scores.data[start:end], scores.indices[start:end]
        keep = np.argpartition(-data, top_k - 1)[:top_k] if len(data) > top_k else np.arange(len(data))
        order = keep[np.argsort(-data[keep], kind="stable")]
        values[row, : len(order)], indices[row, : len(order)] = data[order], cols[order]
    return values, indices


def sparse_search(
    queries: object, corpus: object, top_k: int = 10
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Brute force: every document row times the queries (scipy's CSR product), then each query's top-k."""
    if top_k <= 0:
        raise SbertError(f"top_k must be positive, got {top_k}")
    docs = _csr(corpus, None, "documents")
    scores = (docs @ _csr(queries, docs.shape[1], "queries").T).T.tocsr()
    return top_k_sparse_rows(scores, top_k)


@dataclass
class SparseIndex:
    """An inverted index over sparse document vectors; `search` returns what `sparse_search` returns."""

    postings: scipy.sparse.csr_matrix  # (vocabulary, documents): row t lists the documents holding term t

    @classmethod
    def build(cls, documents: object) -> Self:
        """Index a (documents, vocabulary) sparse matrix (scipy, or anything scipy.sparse.csr_matrix takes)."""
        return cls(_csr(documents, None, "documents").T.tocsr())

    @property
    def size(self) -> int:
        """Documents indexed."""
        return int(self.postings.shape[1])

    @property
    def dimension(self) -> int:
        """Vocabulary width of the vectors."""
        return int(self.postings.shape[0])

    def add(self, documents: object) -> None:
        """Append documents (their ids continue from `size`)."""
        new = _csr(documents, self.dimension, "documents").T.tocsr()
        self.postings = scipy.sparse.hstack([self.postings, new], format="csr")

    def search(self, queries: object, top_k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k dot products of each query: (scores (q, k), document ids (q, k)), -1 where fewer match."""
        if top_k <= 0:
            raise SbertError(f"top_k must be positive, got {top_k}")
        q = _csr(queries, self.dimension, "queries")
        parts = [top_k_sparse_rows(q[s : s + _QUERY_BLOCK] @ self.postings, top_k)
                 for s in range(0, q.shape[0], _QUERY_BLOCK)]  # fmt: skip
        if not parts:
            return np.zeros((0, top_k), dtype=np.float32), np.zeros((0, top_k), dtype=np.int64)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def pool_scores(self, query: object, pool: np.ndarray) -> np.ndarray:
        """Exact dot products of one query row with each document in `pool` (only its own terms' postings read)."""
        q = _csr(query, self.dimension, "queries")
        if q.shape[0] != 1:
            raise SbertError(f"pool_scores takes one query row, got {q.shape[0]}")
        touched = self.postings[q.indices][:, np.asarray(pool, dtype=np.int64)]  # (query terms, pool)
        return np.asarray(q.data @ touched.toarray(), dtype=np.float32).reshape(len(pool))

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Write the postings atomically (a crash keeps the old folder)."""
        with layout.atomic_directory(folder) as tmp:
            scipy.sparse.save_npz(tmp / POSTINGS_FILE, self.postings)

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> Self:
        """Read a folder `save` wrote."""
        path = Path(folder) / POSTINGS_FILE
        if not path.is_file():
            raise SbertError(f"{folder}: not a sparse index (no {POSTINGS_FILE})")
        return cls(scipy.sparse.load_npz(path).tocsr())
