"""A sparse side for an index folder: SPLADE / CSR postings beside the FAISS vectors, for sparse and hybrid search.

`sparse/` inside the index folder holds the postings (`postings.npz`) and `sparse.json` (which model wrote
them, a digest of its weights, how many documents). The documents' ids and texts are the dense index's.
Built with Seismic settings, `sparse/seismic/` also holds an approximate index (search/seismic_index.py),
which searches then use unless asked for the exact postings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import scipy.sparse

from sbert.formats import layout
from sbert.search.hybrid import hybrid_fuse
from sbert.search.index import Hit, IndexFolderError, SearchIndex, hit_arrays, read_side_info
from sbert.search.seismic_index import SeismicSettings, SeismicSparseIndex
from sbert.search.sparse_index import POSTINGS_FILE, SparseIndex

if TYPE_CHECKING:
    from sbert.m3.views import LexicalView
    from sbert.sparse import SparseEncoder

SPARSE_FOLDER = "sparse"
SPARSE_INFO = "sparse.json"
SEISMIC_FOLDER = "seismic"
SparseSearch = SparseIndex | SeismicSparseIndex  # what a sparse side searches with: exact or approximate
_CHUNK = 4096  # documents encoded per round


@dataclass(frozen=True)
class SparseInfo:
    """sparse.json: the model that wrote the postings and what they cover."""

    model: str
    model_digest: str
    count: int
    dimension: int
    approximate: bool = False  # a Seismic index beside the postings


def sparse_digest(model: SparseEncoder | LexicalView) -> str:
    """sha256 of the sparse model's weights and module configs (queries must come from the same model)."""
    from sbert.backends.cache import model_digest

    return model_digest(model)  # type: ignore[arg-type]


def add_sparse_side(
    folder: str | Path, model: SparseEncoder | LexicalView, name: str, texts: list[str],
    max_active_dims: int | None = None, approximate: SeismicSettings | None = None,
) -> SparseInfo:  # fmt: skip
    """Encode `texts` (the index's documents, in id order) as documents and write `sparse/` atomically.

    With `approximate`, a Seismic index of the same vectors is built beside the exact postings.
    """
    parts = [model.encode_document(texts[s : s + _CHUNK], max_active_dims=max_active_dims)
             for s in range(0, len(texts), _CHUNK)]  # fmt: skip
    vectors = scipy.sparse.vstack(parts, format="csr")
    index = SparseIndex.build(vectors)
    info = SparseInfo(name, sparse_digest(model), index.size, index.dimension, approximate is not None)
    with layout.atomic_directory(Path(folder) / SPARSE_FOLDER) as tmp:
        scipy.sparse.save_npz(tmp / POSTINGS_FILE, index.postings)
        if approximate is not None:
            SeismicSparseIndex.build(vectors, approximate).save(tmp / SEISMIC_FOLDER)
        layout.write_json(tmp / SPARSE_INFO, asdict(info))
    return info


def has_sparse_side(dense: SearchIndex) -> bool:
    """Whether the index folder was built with a sparse side."""
    return (dense.folder / SPARSE_FOLDER / SPARSE_INFO).is_file()


def sparse_info(dense: SearchIndex) -> SparseInfo:
    """sparse.json of an index folder (which model wrote its postings), or a one-line error."""
    return read_side_info(dense, f"{SPARSE_FOLDER}/{SPARSE_INFO}", SparseInfo,
                          "no sparse side (build the index with --sparse-model)")  # fmt: skip


def open_sparse_side(dense: SearchIndex, model: SparseEncoder | LexicalView, exact: bool = False) -> SparseSearch:
    """The sparse side of an index folder, checked against its dense side and `model`'s weights.

    Its Seismic index when it was built with one (unless `exact`), else the exact postings.
    """
    info = sparse_info(dense)
    if sparse_digest(model) != info.model_digest:
        raise IndexFolderError(f"{dense.folder}: its sparse side was built by other weights than the query model "
                               f"(it names {info.model!r})")  # fmt: skip
    index = SparseIndex.load(dense.folder / SPARSE_FOLDER)
    if index.size != info.count or info.count != dense.info.count:
        raise IndexFolderError(f"{dense.folder / SPARSE_FOLDER}: {index.size} sparse documents for "
                               f"{dense.info.count} dense ones; rebuild")  # fmt: skip
    if info.approximate and not exact:
        return SeismicSparseIndex.load(dense.folder / SPARSE_FOLDER / SEISMIC_FOLDER)
    return index


def sparse_hits(
    dense: SearchIndex, side: SparseSearch, queries: scipy.sparse.csr_matrix, top_k: int
) -> list[list[Hit]]:
    """Each query's top-k documents by sparse dot product, with their texts."""
    return dense.hits(*side.search(queries, top_k))


def hybrid_hits(
    dense: SearchIndex, dense_hits: list[list[Hit]], sparse: list[list[Hit]], top_k: int, method: str, alpha: float
) -> list[list[Hit]]:
    """The two rankings of each query fused (RRF or weighted); the texts come with the hits, not read again."""
    fused = hybrid_fuse(hit_arrays(dense_hits), hit_arrays(sparse), top_k, method, alpha)
    return dense.hits(*fused, {h.id: h.text for ranking in (dense_hits, sparse) for row in ranking for h in row})
