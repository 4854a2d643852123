"""Information-retrieval evaluation: exact cosine search in bounded memory, then the IR metrics.

nDCG@10, MRR@10, MAP@100, Recall@1/10/100 and Accuracy@1/10, x100.
The metrics follow sentence-transformers' InformationRetrievalEvaluator, so the two agree on the
same vectors: hits ranked by (-score, corpus id); MAP@k divides by min(k, relevant documents);
nDCG uses the graded relevance of the qrels (its ideal ranking sorts the grades), which is the
evaluator's binary nDCG when every grade is 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from sbert.data.beir import IRCollection
from sbert.evaluation.common import Embedder
from sbert.native import native
from sbert.search.exact import merge_top_k, no_hits, semantic_search, top_k_rows
from sbert.search.rerank import RERANK_TOP, rerank_rows
from sbert.similarity import similarity_of
from sbert.vectors.maxsim import MULTI_VECTOR_SIMILARITIES, maxsim_matrix

if TYPE_CHECKING:
    from sbert.reranker.model import CrossEncoder

NDCG_K, MRR_K, MAP_K = 10, 10, 100
RECALL_K, ACCURACY_K = (1, 10, 100), (1, 10)
DEPTH = max(NDCG_K, MRR_K, MAP_K, *RECALL_K, *ACCURACY_K)  # hits kept per query
CORPUS_CHUNK = 50_000  # documents embedded and scored at a time: memory stays bounded


def search(
    queries: Any, corpus_chunks: Iterable[Any], depth: int = DEPTH, score_function: str = "cosine"
) -> tuple[np.ndarray, np.ndarray]:
    """The `depth` best corpus rows per query by `score_function`, over corpus chunks seen one at a time.

    queries (q, d); each chunk (n_i, d); for maxsim / meanmaxsim, lists of token matrices instead.
    Returns scores and global row indices, (q, depth') each, best first (depth' = min(depth, corpus
    size)). Memory: the queries, one chunk, one block of scores and the running best; the whole
    corpus is never embedded at once.
    """
    best, offset = no_hits(len(queries)), 0
    for chunk in corpus_chunks:
        if score_function in MULTI_VECTOR_SIMILARITIES:  # token matrices (TokenSets): exact MaxSim
            scores, rows = top_k_rows(maxsim_matrix(queries, chunk, mean=score_function == "meanmaxsim"), depth)
        else:
            scores, rows = semantic_search(queries, chunk, depth, score_function=score_function)
        best = merge_top_k(best, (scores, rows + offset), depth)
        offset += len(chunk)
    return best


def ranked_ids(scores: np.ndarray, rows: np.ndarray, corpus_ids: Sequence[str]) -> list[list[str]]:
    """Each query's hits as corpus ids, ordered by (-score, corpus id) as sentence-transformers orders them.

    A row of -1 (a ranking with fewer hits than its width, as the sparse index pads) is no hit.
    """
    out = []
    for s, r in zip(scores.tolist(), rows.tolist(), strict=True):
        found = [(score, corpus_ids[i]) for score, i in zip(s, r, strict=True) if i >= 0]
        out.append([doc for _, doc in sorted(found, key=lambda hit: (-hit[0], hit[1]))])
    return out


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain: sum of gain_i / log2(i + 2) over ranks i = 0, 1, ..."""
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def query_metrics(hits: Sequence[str], relevant: dict[str, int]) -> dict[str, float]:
    """One query's metrics (fractions) from its ranked hits and its graded relevant documents."""
    found = [doc in relevant for doc in hits]
    first = next((i for i, f in enumerate(found) if f), None)
    out = {f"ndcg@{NDCG_K}": dcg([relevant.get(d, 0) for d in hits[:NDCG_K]])
           / dcg(sorted(relevant.values(), reverse=True)[:NDCG_K]),
           f"mrr@{MRR_K}": 1 / (first + 1) if first is not None and first < MRR_K else 0.0}  # fmt: skip
    precisions = [sum(found[: i + 1]) / (i + 1) for i in range(min(MAP_K, len(found))) if found[i]]
    out[f"map@{MAP_K}"] = sum(precisions) / min(MAP_K, len(relevant))
    for k in RECALL_K:
        out[f"recall@{k}"] = sum(found[:k]) / len(relevant)
    for k in ACCURACY_K:
        out[f"accuracy@{k}"] = float(any(found[:k]))
    return out


def ir_metrics(hits: Sequence[Sequence[str]], qrels: Sequence[dict[str, int]]) -> dict[str, float]:
    """Every metric averaged over the queries, x100."""
    per_query = [query_metrics(h, r) for h, r in zip(hits, qrels, strict=True)]
    return {name: 100 * float(np.mean([m[name] for m in per_query])) for name in per_query[0]}


def corpus_vectors(
    model: Embedder, corpus: Sequence[str], batch_size: int | None, precision: str
) -> Iterator[np.ndarray]:
    """The corpus embedded CORPUS_CHUNK documents at a time (never all of it in memory at once)."""
    encode = getattr(model, "encode_document", model.encode)  # the model's document prompt, if any
    for start in range(0, len(corpus), CORPUS_CHUNK):
        part = list(corpus[start : start + CORPUS_CHUNK])
        yield encode(part, batch_size=batch_size, show_progress=False, precision=precision)


def evaluate_ir(
    model: Embedder,
    collection: IRCollection,
    batch_size: int | None = None,
    precision: str = "fp32",
    reranker: CrossEncoder | None = None,
    rerank_top: int = RERANK_TOP,
) -> dict[str, float]:
    """nDCG@10, MRR@10, MAP@100, Recall@1/10/100 and Accuracy@1/10 (x100) of exact search.

    Queries and documents are encoded with the model's query and document prompts when it has them,
    and ranked by the model's similarity function (cosine unless it saved another).
    With a `reranker` (a CrossEncoder), each query's `rerank_top` best hits are reordered by its
    scores (the rest keep their retrieval order behind them): the retrieve-then-rerank pipeline.
    """
    model = native(model)  # a drop-in object is evaluated as sbert's own class
    encode = getattr(model, "encode_query", model.encode)
    queries = encode(collection.queries, batch_size=batch_size, show_progress=False, precision=precision)
    chunks = corpus_vectors(model, collection.corpus, batch_size, precision)
    scores, rows = search(queries, chunks, score_function=similarity_of(model))
    hits = ranked_ids(scores, rows, collection.corpus_ids)
    if reranker is not None:
        hits = rerank_hits(reranker, collection, hits, rerank_top, batch_size)
    return ir_metrics(hits, [collection.qrels[q] for q in collection.query_ids])


def rerank_hits(
    reranker: CrossEncoder, collection: IRCollection, hits: list[list[str]], top: int, batch_size: int | None
) -> list[list[str]]:
    """Each query's first `top` hits reordered by the cross-encoder (search/rerank.py's order), the rest behind."""
    if top < 1:
        raise ValueError(f"rerank_top must be positive, got {top}")
    row_of = {doc: i for i, doc in enumerate(collection.corpus_ids)}
    width = max((len(row[:top]) for row in hits), default=0)
    rows = np.full((len(hits), width), -1, dtype=np.int64)
    for q, row in enumerate(hits):
        rows[q, : len(row[:top])] = [row_of[doc] for doc in row[:top]]
    _, kept = rerank_rows(reranker, collection.queries, rows, lambda ids: [collection.corpus[i] for i in ids],
                          width, batch_size)  # fmt: skip
    return [
        [collection.corpus_ids[i] for i in order if i >= 0] + row[top:] for order, row in zip(kept, hits, strict=True)
    ]
