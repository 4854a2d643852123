"""/search over a multi-vector index (`sbert serve --model COLBERT_OR_COLPALI --index DIR`): queries by MaxSim.

The index is one `sbert index build` wrote with the served model (its token matrices, MUVERA encodings and
centroids); it is checked against the model at start-up (width and document prompt). A query is encoded as
the library's `sbert search` encodes it (a page-image model's texts as texts, never opened as a path here),
searched exactly, and each hit names its id, score and text, and a PDF page's file and page.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from fastapi.concurrency import run_in_threadpool

from sbert.errors import SbertError
from sbert.formats.pdf_pages import page_fields
from sbert.serve.scheduler import on_model_thread
from sbert.serve.state import ServerState, check_texts

if TYPE_CHECKING:
    from sbert.multivector import MultiVectorEncoder
    from sbert.search.multivector_index import MultiVectorIndex
    from sbert.vectors.maxsim import TokenSets


def open_multivector_index(folder: str, model: MultiVectorEncoder) -> MultiVectorIndex:
    """The index at `folder`, checked to hold this model's token width and document prompt."""
    from sbert.search.multivector_index import MultiVectorIndex, is_multivector_index

    if not is_multivector_index(folder):
        raise SbertError(f"--index {folder}: not a multi-vector index; a multi-vector --model serves the index "
                         "`sbert index build --model` of that model wrote")  # fmt: skip
    index = MultiVectorIndex.load(folder)
    if index.settings.dimension != model.embedding_dimension:
        raise SbertError(f"--index {folder}: built with {index.settings.dimension}-dimension tokens, the model has "
                         f"{model.embedding_dimension}; serve the model that built it")  # fmt: skip
    prompt = model.settings.resolve_prompt(task="document")
    if index.settings.document_prompt != prompt:
        raise SbertError(f"--index {folder}: documents were embedded with prompt "
                         f"{index.settings.document_prompt!r}, this model's is {prompt!r}")  # fmt: skip
    return index


def query_matrices(model: MultiVectorEncoder, queries: list[str]) -> TokenSets:
    """The queries' token matrices, packed: a page-image model's through its processor, as texts."""
    from sbert.multivector.pages import is_page_model
    from sbert.vectors.maxsim import TokenSets

    if is_page_model(model.transformer):
        return TokenSets.pack(model.encode_known(queries, "text"), model.embedding_dimension)
    return model.encode_query(queries, output="packed")


async def search_multivector(st: ServerState, queries: list[str], top_k: int) -> list[list[dict[str, Any]]]:
    """Each query's hits, best first: id, score, text (and a PDF page's file and page)."""
    model, index = st.multivector, st.multivector_index
    assert model is not None and index is not None
    st.check_limits(queries)
    check_texts(queries, "query")
    matrices = await on_model_thread(partial(query_matrices, model, queries))

    def lookup() -> list[list[dict[str, Any]]]:
        with st.index_lock:
            scores, ids = index.search(matrices, top_k)
            texts = index.texts([int(i) for i in ids.ravel() if i >= 0])
        return [[{"id": int(i), "score": float(s), "text": texts.get(int(i), "")} | page_fields(texts.get(int(i), ""))
                 for s, i in zip(row_s, row_i, strict=True) if i >= 0]
                for row_s, row_i in zip(scores, ids, strict=True)]  # fmt: skip

    return await run_in_threadpool(lookup)
