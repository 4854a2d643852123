"""A persistent vector index: FAISS (flat, IVF, HNSW, int8 or binary) plus an SQLite table of ids and texts.

Folder layout: `index.faiss`, `texts.sqlite` (table texts(id, text)) and `index.json` (model,
its weight digest, dimension, kind, row count); the quantized kinds add `vectors.npy` (the full
vectors that rescore their top candidates) and, for int8, `ranges.npy` (quantized_index.py).
Vectors are L2-normalized, so FAISS inner product is cosine similarity. The folder is written
atomically: a kill mid-build leaves the previous index (or none) in place.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from sbert.errors import ModelFormatError, SbertError
from sbert.formats import layout
from sbert.search import quantized_index as quantized
from sbert.similarity import check_similarity, scaled_rows

if TYPE_CHECKING:
    from sbert.reranker.model import CrossEncoder

log = logging.getLogger(__name__)
T = TypeVar("T")
KINDS = ("flat", "ivf", "hnsw", *quantized.QUANTIZED_KINDS)
INFO_FILE, INDEX_FILE, TEXTS_FILE = "index.json", "index.faiss", "texts.sqlite"
# HNSW graph degree and search breadth: recall@10 >= 0.95 on 1M x 384 sentence vectors
# (benchmarks/speed/search_speed.py); IVF probes 16 of ~4*sqrt(n) lists.
HNSW_M, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH = 32, 200, 128
IVF_PROBES = 16
_ADD_CHUNK = 100_000


class IndexFolderError(SbertError):
    """A missing, corrupt or mismatched index folder."""


@dataclass(frozen=True)
class IndexInfo:
    """index.json: what built the index and what it holds."""

    model: str
    model_digest: str
    dimension: int
    kind: str
    count: int
    ef_search: int = HNSW_EF_SEARCH
    probes: int = IVF_PROBES
    rescore: int = quantized.RESCORE  # quantized kinds: candidates per hit rescored with full vectors
    document_prompt: str = ""  # the prompt text the documents were embedded with
    similarity: str = "cosine"  # cosine (unit vectors, inner product) or dot (raw vectors, inner product)
    dtype: str | None = None  # how the model held its weights (load(dtype=...)): `sbert search` loads it so
    # "image" when the documents are image files the model embedded as images (the server shows them); else "text"
    documents: str = "text"


@dataclass(frozen=True)
class Hit:
    """One search result."""

    id: int
    score: float
    text: str


def new_index(kind: str, dim: int, count: int) -> Any:
    """An empty FAISS index of `kind` for `count` vectors of `dim` (inner-product metric)."""
    faiss = quantized.faiss_module()
    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        return index
    if kind == "ivf":
        lists = max(1, min(int(4 * math.sqrt(max(count, 1))), count // 39 or 1))  # FAISS wants >= 39 points a list
        return faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, lists, faiss.METRIC_INNER_PRODUCT)
    raise SbertError(f"unknown index kind {kind!r}; known: {', '.join(KINDS)}")


def build_index(
    vectors: np.ndarray, texts: Sequence[str], out_dir: str | os.PathLike[str], kind: str, model: str, digest: str,
    rescore_vectors: bool = True, document_prompt: str = "", similarity: str = "cosine", dtype: str | None = None,
    documents: str = "text",
) -> IndexInfo:  # fmt: skip
    """Write an index of `vectors` (row i = texts[i], id i) to `out_dir`, atomically.

    Quantized kinds also keep the full vectors for rescoring unless `rescore_vectors` is False.
    `document_prompt` records the prompt the vectors were embedded with; `similarity` is the
    model's function (cosine or dot; FAISS inner product on unit or raw vectors).
    """
    scale = index_scale(similarity)
    if len(vectors) == 0:
        raise SbertError("cannot build an index of an empty corpus")
    if len(vectors) != len(texts):
        raise ValueError(f"{len(vectors)} vectors but {len(texts)} texts")
    rescore = quantized.RESCORE_BY_KIND.get(kind, quantized.RESCORE)
    info = IndexInfo(model, digest, int(vectors.shape[1]), kind, len(vectors), rescore=rescore,
                     document_prompt=document_prompt, similarity=check_similarity(similarity), dtype=dtype,
                     documents=documents)  # fmt: skip
    ranges = None
    if kind in quantized.QUANTIZED_KINDS:
        index, ranges = quantized.new_quantized(kind, scale(vectors))
    else:
        index = _float_index(kind, vectors, info, scale)
    with layout.atomic_directory(out_dir) as tmp:
        quantized.write_any(index, tmp / INDEX_FILE)
        if kind in quantized.QUANTIZED_KINDS and rescore_vectors:
            quantized.write_vectors(tmp / quantized.VECTORS_FILE, vectors, scale)
        if ranges is not None:
            np.save(tmp / quantized.RANGES_FILE, ranges)
        write_texts(tmp / TEXTS_FILE, texts)
        layout.write_json(tmp / INFO_FILE, asdict(info))
    return info


def write_texts(path: Path, texts: Sequence[str]) -> None:
    """texts.sqlite: table texts(id, text), id = position in `texts`."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE texts (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
        db.executemany("INSERT INTO texts VALUES (?, ?)", enumerate(texts))
    db.close()


def open_texts(path: Path) -> sqlite3.Connection:
    """texts.sqlite opened read-only (one search at a time uses it: the connection is shared)."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)


def texts_by_id(db: sqlite3.Connection, ids: Sequence[int]) -> dict[int, str]:
    """Texts by id, read in chunks (SQLite caps the number of bound parameters)."""
    out: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        part = list(ids[start : start + 500])
        marks = ",".join("?" * len(part))
        out.update(db.execute(f"SELECT id, text FROM texts WHERE id IN ({marks})", part).fetchall())
    return out


def _float_index(kind: str, vectors: np.ndarray, info: IndexInfo, scale: Callable[[np.ndarray], np.ndarray]) -> Any:
    index = new_index(kind, info.dimension, info.count)
    if kind == "ivf":
        # 64 points a list trains k-means well (FAISS asks for >= 39) at a quarter of its default cost.
        sample = np.random.default_rng(0).permutation(len(vectors))[: 64 * index.nlist]
        index.train(scale(vectors[np.sort(sample)]))
    for start in range(0, len(vectors), _ADD_CHUNK):
        index.add(scale(vectors[start : start + _ADD_CHUNK]))
    return index


def index_scale(similarity: str) -> Callable[[np.ndarray], np.ndarray]:
    """How vectors enter the index for a similarity function: unit rows (cosine) or as they are (dot)."""
    kind = check_similarity(similarity)
    if kind not in ("cosine", "dot"):
        raise SbertError(f"the index ranks by inner product: cosine or dot models only, this one uses {kind!r}")
    return lambda x: scaled_rows(x, kind)


class SearchIndex:
    """An index folder opened for queries."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.info = read_info(self.folder)
        try:
            self.index = quantized.read_any(self.folder / INDEX_FILE, self.info.kind)
        except RuntimeError:
            raise IndexFolderError(f"{self.folder / INDEX_FILE}: unreadable FAISS index; rebuild it") from None
        if self.index.d != self.info.dimension or self.index.ntotal != self.info.count or self.info.kind not in KINDS:
            raise IndexFolderError(f"{self.folder}: {INDEX_FILE} does not match {INFO_FILE}; rebuild it")
        if self.info.kind == "hnsw":
            self.index.hnsw.efSearch = self.info.ef_search
        if self.info.kind == "ivf":
            self.index.nprobe = self.info.probes
        self.db = open_texts(self.folder / TEXTS_FILE)
        self.vectors = self._open_vectors()

    def _open_vectors(self) -> np.ndarray | None:
        """The rescoring vectors of a quantized index, memory-mapped (None when built without them)."""
        path = self.folder / quantized.VECTORS_FILE
        if self.info.kind not in quantized.QUANTIZED_KINDS or not path.is_file():
            return None
        try:
            vectors = np.load(path, mmap_mode="r")
        except (ValueError, OSError) as e:
            raise IndexFolderError(f"{path}: unreadable ({e}); rebuild the index") from None
        if vectors.shape != (self.info.count, self.info.dimension) or vectors.dtype != np.float32:
            raise IndexFolderError(f"{path}: holds {vectors.shape} {vectors.dtype}, not the index's rows; rebuild it")
        return vectors

    def check_model(self, digest: str, dimension: int) -> None:
        """Refuse queries embedded by another model than the one that built the index."""
        if dimension != self.info.dimension or digest != self.info.model_digest:
            raise IndexFolderError(
                f"{self.folder}: built with model {self.info.model!r} ({self.info.dimension} dims); "
                f"the query model differs ({dimension} dims, other weights)"
            )

    def check_prompt(self, document_prompt: str) -> str | None:
        """A one-line warning when the model's document prompt is not the one the index was built with."""
        if document_prompt == self.info.document_prompt:
            return None
        warning = (
            f"{self.folder}: documents were embedded with prompt {self.info.document_prompt!r}, this model's "
            f"document prompt is {document_prompt!r}: scores mix two prompts; rebuild the index"
        )
        log.warning(warning)
        return warning

    def search(self, queries: np.ndarray, top_k: int = 10, rescore: int | None = None) -> list[list[Hit]]:
        """Top-k hits per query vector, best first, with their texts.

        Quantized kinds rescore their best `rescore x top_k` candidates (default: index.json's) with the full vectors.
        """
        if top_k <= 0:
            raise ValueError(f"top_k must be positive, got {top_k}")
        q = index_scale(self.info.similarity)(np.atleast_2d(queries))
        if self.info.kind in quantized.QUANTIZED_KINDS:
            multiple = self.info.rescore if rescore is None else rescore
            scores, ids = quantized.search_quantized(self.index, self.info.kind, q, top_k, self.vectors, multiple)
        else:
            scores, ids = self.index.search(q, min(top_k, self.info.count))
        return self.hits(scores, ids)

    def pool_scores(self, query: np.ndarray, pool: np.ndarray) -> np.ndarray:
        """Exact inner products of one query vector with each document in `pool`, as `search` scores them."""
        scaled = index_scale(self.info.similarity)(np.atleast_2d(query))[0]
        return self.stored_vectors(pool) @ scaled

    def stored_vectors(self, ids: np.ndarray) -> np.ndarray:
        """The indexed (scaled) float32 vectors of documents `ids`: the rescoring copy, or read back from FAISS."""
        ids = np.asarray(ids, dtype=np.int64)
        if self.vectors is not None:
            return np.asarray(self.vectors[ids], dtype=np.float32)
        if self.info.kind in quantized.QUANTIZED_KINDS:
            raise IndexFolderError(f"{self.folder}: a {self.info.kind} index built with --no-rescore-vectors keeps "
                                   "no vectors to score candidates with; rebuild it without that flag")  # fmt: skip
        if self.info.kind == "ivf" and self.index.direct_map.no():
            self.index.make_direct_map()  # IVF lists are not addressable by id until mapped
        return np.asarray(self.index.reconstruct_batch(ids), dtype=np.float32).reshape(len(ids), self.info.dimension)

    def rerank(
        self, reranker: CrossEncoder, queries: Sequence[str], hits: list[list[Hit]], top_k: int
    ) -> list[list[Hit]]:
        """Each query's hits reordered by a cross-encoder, the best `top_k` kept, with its scores."""
        from sbert.search.rerank import rerank_rows

        rows = hit_arrays(hits)[1]
        text = {h.id: h.text for row in hits for h in row}
        scores, kept = rerank_rows(reranker, queries, rows, lambda ids: [text[i] for i in ids], top_k)
        return self.hits(scores, kept, text)

    def hits(self, scores: np.ndarray, ids: np.ndarray, texts: Mapping[int, str] | None = None) -> list[list[Hit]]:
        """Per-query (scores, ids) rows as Hits, best first (-1 ids dropped); texts read here unless given."""
        if texts is None:
            texts = self.texts(sorted({int(i) for i in ids.ravel() if i >= 0}))
        return [
            [Hit(int(i), float(s), texts[int(i)]) for s, i in zip(row_s, row_i, strict=True) if i >= 0]
            for row_s, row_i in zip(scores, ids, strict=True)
        ]

    def texts(self, ids: Sequence[int]) -> dict[int, str]:
        """Texts by id."""
        return texts_by_id(self.db, ids)


def read_side_info(dense: SearchIndex, relative: str, kind: Callable[..., T], missing: str) -> T:
    """The JSON record of a side (sparse, ColBERT) inside an index folder as `kind`; `missing` when it has none."""
    path = dense.folder / relative
    if not path.is_file():
        raise IndexFolderError(f"{dense.folder}: {missing}")
    try:
        return kind(**json.loads(path.read_text(encoding="utf-8")))
    except (TypeError, ValueError) as e:
        raise IndexFolderError(f"{path}: unreadable ({e}); rebuild the index") from None


def hit_arrays(hits: Sequence[Sequence[Hit]]) -> tuple[np.ndarray, np.ndarray]:
    """Per-query Hits as (scores (q, k), ids (q, k)) arrays, short rows padded with -inf / -1."""
    width = max((len(row) for row in hits), default=0)
    scores = np.full((len(hits), width), -np.inf, dtype=np.float32)
    ids = np.full((len(hits), width), -1, dtype=np.int64)
    for q, row in enumerate(hits):
        scores[q, : len(row)] = [h.score for h in row]
        ids[q, : len(row)] = [h.id for h in row]
    return scores, ids


def read_info(folder: Path) -> IndexInfo:
    """index.json of a folder, or a one-line error saying what is missing."""
    path = folder / INFO_FILE
    if not path.is_file():
        raise IndexFolderError(f"{folder}: no index here (missing {INFO_FILE}); build one with `sbert index build`")
    for name in (INDEX_FILE, TEXTS_FILE):
        if not (folder / name).is_file():
            raise IndexFolderError(f"{folder}: incomplete index (missing {name}); rebuild it")
    try:
        return IndexInfo(**layout.read_json(path))
    except (TypeError, ModelFormatError) as e:
        raise IndexFolderError(f"{path}: malformed ({e})") from None
