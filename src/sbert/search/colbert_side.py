"""A ColBERT side for an index folder: token matrices beside the FAISS vectors, for MaxSim and three-way search.

`colbert/` inside the index folder holds a multi-vector index of the same documents (`tokens/`, written by
search/multivector_index.py without texts: the ids and texts are the dense index's) and `colbert.json` (which
model wrote it, a digest of its weights, how many documents). BGE-M3's ColBERT output goes here
(`sbert index build --colbert-model BGE-M3`), as does any ColBERT model's, so one folder answers dense,
sparse, ColBERT and fused searches.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sbert.formats import layout
from sbert.search.index import Hit, IndexFolderError, SearchIndex, read_side_info
from sbert.search.multivector_index import IndexSettings, MultiVectorIndex, build_text_index

if TYPE_CHECKING:
    from sbert.multivector import MultiVectorEncoder
    from sbert.vectors.maxsim import TokenSets

COLBERT_FOLDER, COLBERT_INFO, TOKENS_FOLDER = "colbert", "colbert.json", "tokens"


@dataclass(frozen=True)
class ColbertInfo:
    """colbert.json: the model that wrote the token matrices and how many documents they cover."""

    model: str
    model_digest: str
    count: int


def colbert_digest(model: MultiVectorEncoder) -> str:
    """sha256 of the multi-vector model's weights and module configs (queries must come from the same model)."""
    from sbert.backends.cache import model_digest

    return model_digest(model)


def add_colbert_side(
    folder: str | Path, model: MultiVectorEncoder, name: str, texts: list[str], token_format: str = "float16",
    encode: dict[str, Any] | None = None,
) -> IndexSettings:  # fmt: skip
    """Encode `texts` (the index's documents, in id order) as documents and write `colbert/` atomically.

    `encode`: the options the documents are embedded with (backend, precision, batch_tokens).
    """
    settings = IndexSettings(dimension=model.embedding_dimension, token_format=token_format)
    index = build_text_index(model, texts, name, settings, encode)
    info = ColbertInfo(name, colbert_digest(model), len(texts))
    with layout.atomic_directory(Path(folder) / COLBERT_FOLDER) as tmp:
        index.save(tmp / TOKENS_FOLDER)
        layout.write_json(tmp / COLBERT_INFO, asdict(info))
    return index.settings


def has_colbert_side(dense: SearchIndex) -> bool:
    """Whether the index folder was built with a ColBERT side."""
    return (dense.folder / COLBERT_FOLDER / COLBERT_INFO).is_file()


def colbert_info(dense: SearchIndex) -> ColbertInfo:
    """colbert.json of an index folder (which model wrote its token matrices), or a one-line error."""
    return read_side_info(dense, f"{COLBERT_FOLDER}/{COLBERT_INFO}", ColbertInfo,
                          "no ColBERT side (build the index with --colbert-model)")  # fmt: skip


def open_colbert_side(dense: SearchIndex, model: MultiVectorEncoder) -> MultiVectorIndex:
    """The ColBERT side of an index folder, checked against its dense side and `model`'s weights."""
    info = colbert_info(dense)
    if colbert_digest(model) != info.model_digest:
        raise IndexFolderError(f"{dense.folder}: its ColBERT side was built by other weights than the query model "
                               f"(it names {info.model!r})")  # fmt: skip
    index = MultiVectorIndex.load(dense.folder / COLBERT_FOLDER / TOKENS_FOLDER)
    if len(index.docs) != info.count or info.count != dense.info.count:
        raise IndexFolderError(f"{dense.folder / COLBERT_FOLDER}: {len(index.docs)} token matrices for "
                               f"{dense.info.count} dense documents; rebuild")  # fmt: skip
    return index


def colbert_hits(
    dense: SearchIndex, side: MultiVectorIndex, queries: TokenSets, top_k: int, method: str = "plaid"
) -> list[list[Hit]]:
    """Each query's top-k documents by MaxSim on the ColBERT side (`method`: exact, muvera or plaid), with texts."""
    return dense.hits(*side.search(queries, top_k, method=method))
