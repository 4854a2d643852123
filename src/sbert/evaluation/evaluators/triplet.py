"""`TripletEvaluator` (the share of triplets with the anchor nearer its positive) and `MSEEvaluator` (distillation)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sbert.evaluation.evaluators.base import SentenceEvaluator, SimilarityFunction, embed, pair_scores, similarity_name

FUNCTIONS = ("cosine", "dot", "euclidean", "manhattan")


class TripletEvaluator(SentenceEvaluator):
    """`{name}_{fn}_accuracy`: sim(a, p) > sim(a, n) + margin; anchors as queries, the rest as documents."""

    def __init__(
        self,
        anchors: Sequence[str],
        positives: Sequence[str],
        negatives: Sequence[str],
        main_similarity_function: str | SimilarityFunction | None = None,
        margin: float | dict[str, float] | None = None,
        name: str = "",
        batch_size: int = 16,
        show_progress_bar: bool = False,
        write_csv: bool = True,
        truncate_dim: int | None = None,
        similarity_fn_names: list[str] | None = None,
        main_distance_function: str | SimilarityFunction | None = "deprecated",
    ) -> None:
        super().__init__()
        if not len(anchors) == len(positives) == len(negatives):
            raise ValueError("anchors, positives and negatives must be as many")
        self.anchors, self.positives, self.negatives = list(anchors), list(positives), list(negatives)
        self.main_similarity_function = similarity_name(
            main_similarity_function if main_distance_function == "deprecated" else main_distance_function
        )
        names = similarity_fn_names or ([self.main_similarity_function] if self.main_similarity_function else [])
        if unknown := sorted(set(names) - set(FUNCTIONS)):
            raise ValueError(f"similarity_fn_names: unknown {unknown}, expected names in {list(FUNCTIONS)}")
        self.similarity_fn_names = list(names)
        if margin is not None and not isinstance(margin, float | int | dict):
            raise ValueError(f"margin should be a float or a dictionary with keys in {list(FUNCTIONS)}")
        if isinstance(margin, dict) and (unknown := sorted(set(margin) - set(FUNCTIONS))):
            raise ValueError(f"margin: unexpected keys {unknown}, expected keys in {list(FUNCTIONS)}")
        given = margin if isinstance(margin, dict) else dict.fromkeys(FUNCTIONS, float(margin or 0))
        self.margin = {**dict.fromkeys(FUNCTIONS, 0.0), **given}
        self.name, self.batch_size, self.show_progress_bar = name, batch_size, show_progress_bar
        self.write_csv, self.truncate_dim = write_csv, truncate_dim
        self.csv_file = f"triplet_evaluation{'_' + name if name else ''}_results.csv"

    def __call__(
        self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1
    ) -> dict[str, float]:
        """Each similarity function's accuracy (0-1; the model's own function by default)."""
        a = embed(
            model, self.anchors, self.batch_size, self.truncate_dim, "query", show_progress=self.show_progress_bar
        )
        p = embed(model, self.positives, self.batch_size, self.truncate_dim, "document")
        n = embed(model, self.negatives, self.batch_size, self.truncate_dim, "document")
        names = self.similarity_fn_names or [model.similarity_fn_name]
        metrics = {f"{fn}_accuracy": float(np.mean(pair_scores(a, p, fn) > pair_scores(a, n, fn)
                                                   + self.margin.get(fn, 0.0))) for fn in names}  # fmt: skip
        self.csv_headers = ["epoch", "steps", *metrics]
        self.write_csv_row(output_path, self.write_csv, [epoch, steps, *metrics.values()])
        if len(names) > 1:
            metrics["max_accuracy"] = max(metrics.values())
        main = self.main_similarity_function
        self.primary_metric = (
            f"{main}_accuracy" if main else "max_accuracy" if len(names) > 1 else f"{names[0]}_accuracy"
        )
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics


class MSEEvaluator(SentenceEvaluator):
    """`{name}_negative_mse`: minus 100 x the mean squared error of the student's target vectors to the teacher's."""

    def __init__(
        self,
        source_sentences: list[str],
        target_sentences: list[str],
        teacher_model: Any = None,
        show_progress_bar: bool = False,
        batch_size: int = 32,
        name: str = "",
        write_csv: bool = True,
        truncate_dim: int | None = None,
    ) -> None:
        super().__init__()
        if len(source_sentences) != len(target_sentences):
            raise ValueError(f"source_sentences ({len(source_sentences)}) and target_sentences "
                             f"({len(target_sentences)}) must be as many")  # fmt: skip
        self.target_sentences, self.truncate_dim = list(target_sentences), truncate_dim
        self.show_progress_bar, self.batch_size, self.name, self.write_csv = (
            show_progress_bar,
            batch_size,
            name,
            write_csv,
        )
        self.csv_file, self.csv_headers = f"mse_evaluation_{name}_results.csv", ["epoch", "steps", "MSE"]
        self.primary_metric = "negative_mse"
        self.source_embeddings = embed(teacher_model, list(source_sentences), batch_size, truncate_dim)

    def __call__(
        self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1
    ) -> dict[str, float]:
        """The negative MSE (x100), higher is better."""
        target = embed(model, self.target_sentences, self.batch_size, self.truncate_dim, show_progress=False)
        mse = float(((self.source_embeddings - target) ** 2).mean() * 100)
        self.write_csv_row(output_path, self.write_csv, [epoch, steps, mse])
        self.primary_metric = "negative_mse"
        metrics = self.prefix_name_to_metrics({"negative_mse": -mse}, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics
