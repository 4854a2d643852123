"""What sentence-transformers' evaluators share: the call, the name prefix, `primary_metric`, and how they embed.

An evaluator is called as `evaluator(model)` (also `output_path=`, `epoch=`, `steps=`) and returns its
metrics as fractions (0-1, not x100) keyed `{name}_{metric}`; `primary_metric` names the one that
selects checkpoints. The model is any sbert encoder, native or drop-in (`sbert.native.native` is the seam).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from sbert.native import native
from sbert.similarity import SimilarityFunction, pairwise_similarity
from sbert.util import select_max_active_dims
from sbert.vectors.maxsim import MULTI_VECTOR_SIMILARITIES, maxsim_pairs


def similarity_name(value: str | SimilarityFunction | None) -> str | None:
    """A similarity given as an enum member or a string, as its string name (None stays None)."""
    return None if value is None else SimilarityFunction(value).value


def pair_scores(a: Any, b: Any, name: str) -> np.ndarray:
    """Row i of `a` against row i of `b` under `name` (distances negated: higher is more similar), float32.

    For maxsim / meanmaxsim, `a` and `b` are lists of token matrices (a multi-vector model's `embed`).
    """
    if name in MULTI_VECTOR_SIMILARITIES:
        return np.asarray(maxsim_pairs(a, b, mean=name == "meanmaxsim"), dtype=np.float32)
    return np.asarray(pairwise_similarity(a, b, name), dtype=np.float32)


class SentenceEvaluator:
    """The base of every evaluator: `greater_is_better`, `primary_metric`, the name prefix and the CSV log."""

    csv_file: str = ""
    csv_headers: list[str]

    def __init__(self) -> None:
        self.greater_is_better = True
        self.primary_metric: str | None = None

    def __call__(
        self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1
    ) -> dict[str, float]:
        """The metrics of `model` on this evaluator's data (subclasses compute them)."""
        raise NotImplementedError

    def prefix_name_to_metrics(self, metrics: dict[str, float], name: str) -> dict[str, float]:
        """`{name}_{key}` for every metric (unchanged without a name); `primary_metric` gets the prefix too."""
        if not name:
            return {k: float(v) for k, v in metrics.items()}
        if self.primary_metric is not None and not self.primary_metric.startswith(name + "_"):
            self.primary_metric = f"{name}_{self.primary_metric}"
        return {f"{name}_{k}": float(v) for k, v in metrics.items()}

    def store_metrics_in_model_card_data(self, model: Any, metrics: dict[str, Any], epoch: int = 0,
                                         step: int = 0) -> None:  # fmt: skip
        """Keep the metrics on the model for its card (sbert's card reads the training log instead)."""
        model.evaluation_metrics = {**getattr(model, "evaluation_metrics", {}), **metrics}

    @property
    def description(self) -> str:
        """The class name in words: BinaryClassificationEvaluator -> "Binary Classification"."""
        name = type(self).__name__.removesuffix("Evaluator")
        return "".join(f" {c}" if c.isupper() and i else c for i, c in enumerate(name))

    def get_config_dict(self) -> dict[str, Any]:
        """Settings worth naming in a model card (none by default)."""
        return {}

    def write_csv_row(self, output_path: str | None, write: bool, row: Sequence[Any]) -> None:
        """Append `row` (epoch, steps, metrics...) to this evaluator's CSV under `output_path`, headers first."""
        if output_path is None or not write or not self.csv_file:
            return
        path = Path(output_path) / self.csv_file
        os.makedirs(output_path, exist_ok=True)
        new = not path.is_file()
        with path.open("a", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            if new:
                writer.writerow(self.csv_headers)
            writer.writerow(list(row))


BaseEvaluator = SentenceEvaluator


@dataclass
class SparseRun:
    """While a sparse evaluator runs (evaluators/sparse.py): its `max_active_dims`, and every batch `embed` made."""

    max_active_dims: int | None
    seen: list[np.ndarray] = field(default_factory=list)


SPARSE_RUN: ContextVar[SparseRun | None] = ContextVar("SPARSE_RUN", default=None)


def embed(
    model: Any,
    texts: Sequence[str],
    batch_size: int,
    truncate_dim: int | None = None,
    task: str | None = None,
    prompt_name: str | None = None,
    prompt: str | None = None,
    show_progress: bool = False,
) -> np.ndarray:
    """float32 (n, dim) vectors of `texts` by sbert's encode, with the task's prompt (query / document) if any.

    A multi-vector model gives a list of (tokens, dim) matrices instead (`truncate_dim` cuts each token vector, then
    unit length again). Sparse vectors (a scipy matrix) come
    dense, (n, vocab); under a sparse evaluator each keeps its
    `max_active_dims` largest entries (6.2's rule, util.select_max_active_dims) and is recorded.
    """
    options = {"batch_size": batch_size, "show_progress": show_progress, "task": task, "prompt_name": prompt_name,
               "prompt": prompt}  # fmt: skip
    if getattr(native(model), "token_level", False):  # a multi-vector model: its token matrices, scored by MaxSim
        # 6.3's truncate_dim cuts every token vector and makes it unit length again (the model's encode does)
        return native(model).encode(list(texts), **options, truncate_dim=truncate_dim)
    if truncate_dim is not None:
        options["truncate_dim"] = truncate_dim
    out = native(model).encode(list(texts), **options)
    vectors = np.asarray(out.toarray() if scipy.sparse.issparse(out) else out, dtype=np.float32)
    run = SPARSE_RUN.get()
    if run is not None:
        vectors = np.asarray(select_max_active_dims(vectors, run.max_active_dims), dtype=np.float32)
        run.seen.append(vectors)
    return vectors


class SequentialEvaluator(SentenceEvaluator):
    """Several evaluators one after another: every metric, and the main score of their primary metrics."""

    def __init__(
        self,
        evaluators: Iterable[SentenceEvaluator],
        main_score_function: Callable[[list[float]], float] = lambda scores: scores[-1],
    ) -> None:
        super().__init__()
        self.evaluators = list(evaluators)
        self.main_score_function = main_score_function

    def __call__(
        self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1
    ) -> dict[str, float]:
        """Each evaluator's metrics merged; `sequential_score` is the main score of their primary metrics."""
        merged: dict[str, float] = {}
        primaries = []
        for evaluator in self.evaluators:
            metrics = evaluator(model, output_path, epoch, steps)
            assert evaluator.primary_metric is not None
            primaries.append(metrics[evaluator.primary_metric])
            merged.update(metrics)
        merged["sequential_score"] = float(self.main_score_function(primaries))
        self.primary_metric = "sequential_score"
        return merged
