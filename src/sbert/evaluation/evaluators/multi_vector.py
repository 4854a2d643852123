"""sentence-transformers 6.2's multi-vector evaluators: the dense ones on a ColBERT model's token matrices.

A multi-vector model embeds each text as (tokens, dim) matrices (queries with the query rules, documents
with the document rules) and the evaluators score them by MaxSim, the model's similarity, so the metric
keys are 6.2's (`{name}_maxsim_ndcg@10`, `{name}_maxsim_accuracy`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sbert.evaluation.evaluators.retrieval import InformationRetrievalEvaluator
from sbert.evaluation.evaluators.triplet import TripletEvaluator


class MultiVectorInformationRetrievalEvaluator(InformationRetrievalEvaluator):
    """InformationRetrievalEvaluator by MaxSim; 6.2's corpus chunks of 5,000 documents."""

    def __init__(
        self,
        queries: dict[str, str],
        corpus: dict[str, str],
        relevant_docs: dict[str, set[str]],
        *,
        corpus_chunk_size: int = 5000,
        chunk_elements: int | None = None,  # 6.2's memory bound on a score block: sbert's MaxSim bounds its own
        score_functions: dict[str, Callable[..., Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(queries, corpus, relevant_docs, corpus_chunk_size=corpus_chunk_size,
                         score_functions=score_functions, **kwargs)  # fmt: skip


class MultiVectorTripletEvaluator(TripletEvaluator):
    """TripletEvaluator by MaxSim: the share of triplets whose anchor scores its positive above its negative."""
