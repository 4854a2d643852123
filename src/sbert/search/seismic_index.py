"""Approximate sparse search with Seismic (the `pyseismic-lsr` package), beside the exact inverted index.

Seismic prunes each term's postings to the documents with the largest weights, groups them into
blocks with a summary vector, and at query time visits only the query's `query_cut` largest terms
and the blocks whose summary could still beat the current k-th score (`heap_factor` < 1 skips more).
The candidates it keeps are scored exactly, so scores equal the dot product; only recall can drop.
`search` answers as `SparseIndex.search` does (scores, document ids, -1 where fewer are found), so
benchmarks/speed/sparse_search.py measures both on the same queries.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import numpy as np
import scipy.sparse

from sbert.errors import SbertError
from sbert.formats import layout
from sbert.install_hint import install_hint

SETTINGS_FILE = "seismic.json"
INDEX_PREFIX = "postings"  # Seismic writes PREFIX.index.seismic


def _seismic() -> Any:
    try:
        import seismic
    except ImportError:
        raise SbertError(f"approximate sparse search needs Seismic: {install_hint('seismic')} "
                         "(the pyseismic-lsr package)") from None  # fmt: skip
    return seismic


@dataclass(frozen=True)
class SeismicSettings:
    """Build (n_postings, centroid_fraction, summary_energy) and search (query_cut, heap_factor) knobs."""

    n_postings: int = 4000  # documents kept per term, on average (Seismic's guide: 3,000-6,000 at 10M documents)
    centroid_fraction: float = 0.1
    summary_energy: float = 0.4
    query_cut: int = 10
    heap_factor: float = 0.7
    threads: int = 0  # 0: every core


class SeismicSparseIndex:
    """An approximate index over (documents, vocabulary) sparse vectors; search scores are exact dot products."""

    def __init__(self, index: Any, size: int, dimension: int, settings: SeismicSettings) -> None:
        self.index, self.size, self.dimension, self.settings = index, size, dimension, settings

    @classmethod
    def build(cls, documents: object, settings: SeismicSettings | None = None) -> Self:
        """Index the rows of a sparse matrix (ids are row numbers; an empty row is never found)."""
        seismic, settings = _seismic(), settings or SeismicSettings()
        docs = scipy.sparse.csr_matrix(documents, dtype=np.float32)
        docs.sort_indices()  # Seismic wants each row's components increasing
        dataset = seismic.SeismicDataset()
        text = seismic.get_seismic_string()
        ids = np.arange(docs.shape[0]).astype(str).astype(text)
        dataset.add_documents_by_id(ids, docs.indices.astype(np.int64), docs.data, docs.indptr.astype(np.int64))
        index = seismic.SeismicIndex.build_from_dataset(
            dataset, n_postings=settings.n_postings, centroid_fraction=settings.centroid_fraction,
            summary_energy=settings.summary_energy, num_threads=settings.threads,
        )  # fmt: skip
        return cls(index, docs.shape[0], docs.shape[1], settings)

    def search(self, queries: object, top_k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Approximate top-k dot products of each query: (scores (q, k), document ids (q, k)), -1 where fewer."""
        if top_k <= 0:
            raise SbertError(f"top_k must be positive, got {top_k}")
        q = scipy.sparse.csr_matrix(queries, dtype=np.float32)
        if q.shape[1] != self.dimension:
            raise SbertError(f"queries have {q.shape[1]} dimensions; the index has {self.dimension}")
        text = _seismic().get_seismic_string()
        rows = range(q.shape[0])
        components = [q.indices[q.indptr[i] : q.indptr[i + 1]].astype(str).astype(text) for i in rows]
        values = [q.data[q.indptr[i] : q.indptr[i + 1]] for i in rows]
        found = self.index.batch_search(
            np.arange(q.shape[0]).astype(str).astype(text), components, values, top_k,
            self.settings.query_cut, self.settings.heap_factor, num_threads=self.settings.threads,
        )  # fmt: skip
        scores = np.full((q.shape[0], top_k), -np.inf, dtype=np.float32)
        ids = np.full((q.shape[0], top_k), -1, dtype=np.int64)
        for hits in found:  # each hit: (query id, score, document id), best first; lists come in any order
            for j, (query, score, doc) in enumerate(hits[:top_k]):
                scores[int(query), j], ids[int(query), j] = score, int(doc)
        return scores, ids

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Write the index and its settings atomically (a crash keeps the old folder)."""
        with layout.atomic_directory(folder) as tmp:
            self.index.save(str(tmp / INDEX_PREFIX))
            meta = {"size": self.size, "dimension": self.dimension, **self.settings.__dict__}
            (tmp / SETTINGS_FILE).write_text(json.dumps(meta, indent=2), encoding="utf-8")

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> Self:
        """Read a folder `save` wrote."""
        meta_path = Path(folder) / SETTINGS_FILE
        if not meta_path.is_file():
            raise SbertError(f"{folder}: not a Seismic index (no {SETTINGS_FILE})")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        size, dimension = meta.pop("size"), meta.pop("dimension")
        index = _seismic().SeismicIndex.load(str(Path(folder) / f"{INDEX_PREFIX}.index.seismic"))
        return cls(index, size, dimension, SeismicSettings(**meta))
