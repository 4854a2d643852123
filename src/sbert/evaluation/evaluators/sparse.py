"""sentence-transformers 6.2's sparse evaluators: the dense ones on a SparseEncoder, plus how sparse its vectors are.

Each returns its dense twin's metrics (scored on the vectors as they are, by the model's similarity: dot
for SPLADE) and, per column, `active_dims` (mean non-zero entries per vector) and `sparsity_ratio`
(1 - active_dims / width); the retrieval one adds `avg_flops`, the expected number of dimensions a query
and a document share. `max_active_dims` (in the place of the dense evaluators' `truncate_dim`) keeps
each vector's largest entries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from sbert.evaluation.evaluators.base import SPARSE_RUN, SparseRun
from sbert.evaluation.evaluators.binary import BinaryClassificationEvaluator
from sbert.evaluation.evaluators.ranking import RerankingEvaluator, TranslationEvaluator
from sbert.evaluation.evaluators.retrieval import InformationRetrievalEvaluator
from sbert.evaluation.evaluators.similarity import EmbeddingSimilarityEvaluator
from sbert.evaluation.evaluators.triplet import MSEEvaluator, TripletEvaluator


def sparsity(vectors: np.ndarray) -> dict[str, float]:
    """Mean non-zero entries per row, and 1 minus their share of the width."""
    if not vectors.size:
        return {"active_dims": 0.0, "sparsity_ratio": 1.0}
    active = float(np.count_nonzero(vectors, axis=1).mean())
    return {"active_dims": active, "sparsity_ratio": 1.0 - active / vectors.shape[1]}


@contextmanager
def recording(max_active_dims: int | None) -> Iterator[list[np.ndarray]]:
    """Every batch of vectors the evaluator embeds while the block runs, in order, cut to `max_active_dims`."""
    run = SparseRun(max_active_dims)
    token = SPARSE_RUN.set(run)
    try:
        yield run.seen
    finally:
        SPARSE_RUN.reset(token)


class _SparseStats:
    """The sparse evaluators' call: the dense twin's metrics (next in the MRO), plus the sparsity of what it embedded.

    `columns` names the embedded vectors ("" for all of them together), `extra` adds evaluator-wide figures;
    every key gets the evaluator's name prefix, as the dense metrics do.
    """

    name: str
    max_active_dims: int | None

    def columns(self, seen: list[np.ndarray]) -> dict[str, np.ndarray]:
        """The vectors the run embedded, by column name."""
        return {"": np.vstack(seen)}

    def extra(self, columns: dict[str, np.ndarray]) -> dict[str, float]:
        """Figures beyond each column's sparsity (none by default)."""
        return {}

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1,
                 steps: int = -1) -> dict[str, float]:  # fmt: skip
        """The dense evaluator's metrics on the sparse vectors, then active_dims and sparsity_ratio per column."""
        with recording(self.max_active_dims) as seen:
            metrics: dict[str, float] = super().__call__(model, output_path, epoch, steps)  # type: ignore[misc]
        columns = self.columns(seen)
        stats: dict[str, float] = {}
        for column, vectors in columns.items():
            stats |= {f"{column}_{k}" if column else k: v for k, v in sparsity(vectors).items()}
        stats |= self.extra(columns)
        return metrics | {(f"{self.name}_{k}" if self.name else k): v for k, v in stats.items()}


class SparseEmbeddingSimilarityEvaluator(_SparseStats, EmbeddingSimilarityEvaluator):
    """EmbeddingSimilarityEvaluator on sparse vectors, plus active_dims and sparsity_ratio."""

    def __init__(self, sentences1: list[str], sentences2: list[str], scores: list[float], batch_size: int = 16,
                 main_similarity: Any = None, similarity_fn_names: list[str] | None = None, name: str = "",
                 show_progress_bar: bool = False, write_csv: bool = True,
                 max_active_dims: int | None = None) -> None:  # fmt: skip
        super().__init__(sentences1, sentences2, scores, batch_size, main_similarity, similarity_fn_names, name,
                         show_progress_bar, write_csv)  # fmt: skip
        self.max_active_dims = max_active_dims


class SparseBinaryClassificationEvaluator(_SparseStats, BinaryClassificationEvaluator):
    """BinaryClassificationEvaluator on sparse vectors, plus active_dims and sparsity_ratio."""

    def __init__(self, sentences1: list[str], sentences2: list[str], labels: list[int], name: str = "",
                 batch_size: int = 32, show_progress_bar: bool = False, write_csv: bool = True,
                 max_active_dims: int | None = None, similarity_fn_names: list[str] | None = None) -> None:  # fmt: skip
        super().__init__(sentences1, sentences2, labels, name, batch_size, show_progress_bar, write_csv, None,
                         similarity_fn_names)  # fmt: skip
        self.max_active_dims = max_active_dims


class SparseTripletEvaluator(_SparseStats, TripletEvaluator):
    """TripletEvaluator on sparse vectors, plus the sparsity of anchors, positives and negatives."""

    def __init__(self, anchors: list[str], positives: list[str], negatives: list[str],
                 main_similarity_function: Any = None, margin: float | dict[str, float] | None = None,
                 name: str = "", batch_size: int = 16, show_progress_bar: bool = False, write_csv: bool = True,
                 max_active_dims: int | None = None, similarity_fn_names: list[str] | None = None,
                 main_distance_function: Any = "deprecated") -> None:  # fmt: skip
        super().__init__(anchors, positives, negatives, main_similarity_function, margin, name, batch_size,
                         show_progress_bar, write_csv, None, similarity_fn_names, main_distance_function)  # fmt: skip
        self.max_active_dims = max_active_dims

    def columns(self, seen: list[np.ndarray]) -> dict[str, np.ndarray]:
        """Anchors, positives and negatives apart."""
        return dict(zip(("anchor", "positive", "negative"), seen, strict=True))


class SparseMSEEvaluator(_SparseStats, MSEEvaluator):
    """MSEEvaluator of a sparse student against its teacher's vectors, plus the student's sparsity."""

    def __init__(self, source_sentences: list[str], target_sentences: list[str], teacher_model: Any = None,
                 show_progress_bar: bool = False, batch_size: int = 32, name: str = "", write_csv: bool = True,
                 max_active_dims: int | None = None) -> None:  # fmt: skip
        super().__init__(source_sentences, target_sentences, teacher_model, show_progress_bar, batch_size, name,
                         write_csv)  # fmt: skip
        self.max_active_dims = max_active_dims


class SparseInformationRetrievalEvaluator(_SparseStats, InformationRetrievalEvaluator):
    """InformationRetrievalEvaluator on sparse vectors, plus query and corpus sparsity and avg_flops."""

    def __init__(
        self,
        queries: dict[str, str],
        corpus: dict[str, str],
        relevant_docs: dict[str, set[str]],
        corpus_chunk_size: int = 50000,
        mrr_at_k: list[int] = [10],  # noqa: B006 (6.2's defaults, copied by the dense evaluator)
        ndcg_at_k: list[int] = [10],  # noqa: B006
        accuracy_at_k: list[int] = [1, 3, 5, 10],  # noqa: B006
        precision_recall_at_k: list[int] = [1, 3, 5, 10],  # noqa: B006
        map_at_k: list[int] = [100],  # noqa: B006
        show_progress_bar: bool = False,
        batch_size: int = 32,
        name: str = "",
        write_csv: bool = True,
        max_active_dims: int | None = None,
        score_functions: dict[str, Any] | None = None,
        main_score_function: Any = None,
        query_prompt: str | None = None,
        query_prompt_name: str | None = None,
        corpus_prompt: str | None = None,
        corpus_prompt_name: str | None = None,
        write_predictions: bool = False,
    ) -> None:
        super().__init__(queries, corpus, relevant_docs, corpus_chunk_size, mrr_at_k, ndcg_at_k, accuracy_at_k,
                         precision_recall_at_k, map_at_k, show_progress_bar, batch_size, name, write_csv,
                         None, score_functions, main_score_function, query_prompt, query_prompt_name,
                         corpus_prompt, corpus_prompt_name, write_predictions)  # fmt: skip
        self.max_active_dims = max_active_dims

    def columns(self, seen: list[np.ndarray]) -> dict[str, np.ndarray]:
        """Queries, then the corpus chunks, of the first score function's pass."""
        chunks = -(-len(self.corpus) // self.corpus_chunk_size)
        return {"query": seen[0], "corpus": np.vstack(seen[1 : 1 + chunks])}

    def extra(self, columns: dict[str, np.ndarray]) -> dict[str, float]:
        """avg_flops: the dimensions a query and a document are expected to share."""
        return {"avg_flops": avg_flops(columns["query"], columns["corpus"])}


class SparseRerankingEvaluator(_SparseStats, RerankingEvaluator):
    """RerankingEvaluator on sparse vectors, plus query and corpus sparsity."""

    def __init__(self, samples: list[dict[str, str | list[str]]], at_k: int = 10, name: str = "",
                 write_csv: bool = True,
                 similarity_fct: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
                 batch_size: int = 64, show_progress_bar: bool = False, use_batched_encoding: bool = True,
                 max_active_dims: int | None = None, mrr_at_k: int | None = None) -> None:  # fmt: skip
        super().__init__(samples, at_k, name, write_csv, similarity_fct, batch_size, show_progress_bar,
                         use_batched_encoding, None, mrr_at_k)  # fmt: skip
        self.max_active_dims = max_active_dims

    def columns(self, seen: list[np.ndarray]) -> dict[str, np.ndarray]:
        """The queries, then every sample's documents."""
        return {"query": seen[0], "corpus": seen[1]}


class SparseTranslationEvaluator(_SparseStats, TranslationEvaluator):
    """TranslationEvaluator on sparse vectors, plus their sparsity."""

    def __init__(self, source_sentences: list[str], target_sentences: list[str], show_progress_bar: bool = False,
                 batch_size: int = 16, name: str = "", print_wrong_matches: bool = False, write_csv: bool = True,
                 max_active_dims: int | None = None) -> None:  # fmt: skip
        super().__init__(source_sentences, target_sentences, show_progress_bar, batch_size, name, print_wrong_matches,
                         write_csv)  # fmt: skip
        self.max_active_dims = max_active_dims


def avg_flops(queries: np.ndarray, documents: np.ndarray) -> float:
    """The expected number of dimensions a query and a document both use: Σ_j P(q_j != 0) · P(d_j != 0)."""
    return float(np.dot((queries != 0).mean(axis=0), (documents != 0).mean(axis=0)))
