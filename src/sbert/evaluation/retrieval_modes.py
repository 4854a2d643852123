"""A retrieval collection scored dense, sparse and hybrid, side by side: the same metrics for each ranking.

Dense ranks by the bi-encoder's similarity (retrieval.py's bounded-memory search); sparse by the
dot product of a SparseEncoder's query and document vectors (SPLADE or CSR, searched with the exact
inverted index); hybrid fuses the two rankings (reciprocal rank or a weighted sum of normalised
scores, search/hybrid.py), as `sbert search --mode hybrid` and `/search` do. Each ranking goes
`DEPTH` deep before fusion, so Recall@100 of a hybrid counts documents either side found.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse

from sbert.data.beir import IRCollection
from sbert.evaluation.common import Embedder
from sbert.evaluation.retrieval import DEPTH, corpus_vectors, ir_metrics, ranked_ids, search
from sbert.search.hybrid import METHODS, hybrid_fuse
from sbert.search.sparse_index import SparseIndex
from sbert.similarity import similarity_of

if TYPE_CHECKING:
    from sbert.sparse import SparseEncoder

Ranking = tuple[np.ndarray, np.ndarray]  # (scores (q, k), corpus rows (q, k)), best first, -1 past the end
_CHUNK = 4096  # documents sparse-encoded at a time


def dense_ranking(model: Embedder, collection: IRCollection, batch_size: int | None) -> Ranking:
    """The bi-encoder's DEPTH best documents per query (query and document prompts as evaluate_ir uses them)."""
    encode = getattr(model, "encode_query", model.encode)
    queries = encode(collection.queries, batch_size=batch_size, show_progress=False)
    chunks = corpus_vectors(model, collection.corpus, batch_size, "fp32")
    return search(queries, chunks, score_function=similarity_of(model))


def sparse_ranking(model: SparseEncoder, collection: IRCollection, batch_size: int | None) -> Ranking:
    """The sparse encoder's DEPTH best documents per query, by exact dot product over an inverted index."""
    corpus, batch = collection.corpus, batch_size or 32
    parts = [model.encode_document(corpus[s : s + _CHUNK], batch_size=batch) for s in range(0, len(corpus), _CHUNK)]
    index = SparseIndex.build(scipy.sparse.vstack(parts, format="csr"))
    return index.search(model.encode_query(collection.queries, batch_size=batch), DEPTH)


def metrics_of(ranking: Ranking, collection: IRCollection) -> dict[str, float]:
    """The IR metrics of a ranking, with ties ordered by corpus id as evaluate_ir orders them."""
    hits = ranked_ids(*ranking, collection.corpus_ids)
    return ir_metrics(hits, [collection.qrels[q] for q in collection.query_ids])


def evaluate_ir_modes(
    model: Embedder,
    sparse_model: SparseEncoder,
    collection: IRCollection,
    batch_size: int | None = None,
    alpha: float = 0.5,
) -> dict[str, dict[str, float]]:
    """Metrics of the dense, sparse and each hybrid ranking: {"dense": ..., "sparse": ..., "hybrid-rrf": ...}.

    `alpha` is the dense side's weight in the weighted fusion (reciprocal rank fusion has no weight).
    """
    dense, sparse = dense_ranking(model, collection, batch_size), sparse_ranking(sparse_model, collection, batch_size)
    out = {"dense": metrics_of(dense, collection), "sparse": metrics_of(sparse, collection)}
    for method in METHODS:
        out[f"hybrid-{method}"] = metrics_of(hybrid_fuse(dense, sparse, DEPTH, method, alpha), collection)
    return out
