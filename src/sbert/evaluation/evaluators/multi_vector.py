"""sentence-transformers 6.3's multi-vector evaluators: the dense ones on a ColBERT model's token matrices.

A multi-vector model embeds each text as (tokens, dim) matrices (queries with the query rules, documents
with the document rules) and the evaluators score them by MaxSim, the model's similarity, so the metric
keys are 6.2's (`{name}_maxsim_ndcg@10`, `{name}_maxsim_accuracy`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sbert.evaluation.evaluators.ranking import RerankingEvaluator
from sbert.evaluation.evaluators.retrieval import InformationRetrievalEvaluator
from sbert.evaluation.evaluators.triplet import TripletEvaluator
from sbert.multivector.tokens import refuse_token_pooling
from sbert.similarity import check_maxsim_scorer
from sbert.vectors.maxsim import maxsim_matrix


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
        token_pooling: Any = None,
        score_functions: dict[str, Callable[..., Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        refuse_token_pooling(token_pooling, type(self).__name__)
        super().__init__(queries, corpus, relevant_docs, corpus_chunk_size=corpus_chunk_size,
                         score_functions=score_functions, **kwargs)  # fmt: skip


class MultiVectorTripletEvaluator(TripletEvaluator):
    """TripletEvaluator by MaxSim: the share of triplets whose anchor scores its positive above its negative.

    `truncate_dim` cuts every token vector and makes it unit length again, as 6.3 does.
    """

    def __init__(self, *args: Any, token_pooling: Any = None, **kwargs: Any) -> None:
        refuse_token_pooling(token_pooling, type(self).__name__)
        super().__init__(*args, **kwargs)


class MultiVectorRerankingEvaluator(RerankingEvaluator):
    """RerankingEvaluator by MaxSim: each query's positives ranked among its negatives (MAP, MRR@k, nDCG@k)."""

    def __init__(self, samples: list[dict[str, Any]], *, at_k: int = 10, name: str = "", write_csv: bool = True,
                 similarity_fct: Callable[..., Any] | None = None, batch_size: int = 16,
                 show_progress_bar: bool = False, use_batched_encoding: bool = True, truncate_dim: int | None = None,
                 token_pooling: Any = None) -> None:  # fmt: skip
        check_maxsim_scorer(similarity_fct, type(self).__name__)
        refuse_token_pooling(token_pooling, type(self).__name__)
        super().__init__(samples, at_k, name, write_csv, batch_size=batch_size, show_progress_bar=show_progress_bar,
                         use_batched_encoding=use_batched_encoding, truncate_dim=truncate_dim)  # fmt: skip

    def scores(self, query: Any, documents: Any, model: Any) -> np.ndarray:
        """MaxSim of one query's token matrix against each of its documents'."""
        return np.asarray(maxsim_matrix([query], list(documents))[0], dtype=np.float64)
