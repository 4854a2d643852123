"""Evaluators: each maps (model, dataset) to named scores (x100 where a correlation or accuracy).

sentence-transformers' evaluator classes (0-1 values, `primary_metric`) are here too, under its names
(evaluation/evaluators/).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sbert.data.beir import IRCollection
from sbert.data.common import Dataset
from sbert.errors import SbertError
from sbert.evaluation.nli import evaluate_nli
from sbert.evaluation.sts import evaluate_sts
from sbert.evaluation.triplet import evaluate_triplets

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder


def evaluate(
    model: SentenceEncoder, dataset: Dataset | IRCollection, batch_size: int | None = None
) -> tuple[str, dict[str, float]]:
    """Score a dev/test set with the evaluator its kind calls for: (headline metric, all scores)."""
    if isinstance(dataset, IRCollection):
        from sbert.evaluation.retrieval import evaluate_ir

        return "ndcg@10", evaluate_ir(model, dataset, batch_size)
    if dataset.kind == "pair-score":
        return "spearman", evaluate_sts(model, dataset, batch_size)
    if dataset.kind == "triplet":
        return "accuracy", evaluate_triplets(model, dataset, batch_size)
    raise SbertError(f"{dataset.name}: no evaluator for {dataset.kind} data (use STS pairs, triplets or ir:DIR)")


# sentence-transformers' evaluator classes: imported last, as they use this package's search and metrics.
from sbert.evaluation import evaluators  # noqa: E402
from sbert.evaluation.evaluators import *  # noqa: E402, F403

__all__ = [*evaluators.__all__, "evaluate", "evaluate_nli", "evaluate_sts", "evaluate_triplets"]
