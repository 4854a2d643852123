"""`BinaryClassificationEvaluator`: how well a similarity threshold separates duplicate pairs from the rest.

For each similarity function: the best accuracy over thresholds, the best F1 (with its precision and
recall), average precision, and the Matthews correlation at the F1 threshold; fractions, not x100.
Distances (euclidean, manhattan) are scored as distances: smaller means "same".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sbert.evaluation.evaluators.base import SentenceEvaluator, embed, pair_scores

METRICS = ("accuracy", "accuracy_threshold", "f1", "f1_threshold", "precision", "recall", "ap", "mcc")


def _groups(scores: np.ndarray, labels: np.ndarray, greater: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct scores from most to least similar, and the positives and negatives at or above each."""
    order = np.argsort(-scores if greater else scores, kind="stable")
    s, y = scores[order], labels[order]
    last = np.r_[s[1:] != s[:-1], True]  # the end of each run of equal scores: a threshold can only cut there
    return s[last], np.cumsum(y)[last], np.cumsum(1 - y)[last]


def _between(s: np.ndarray, i: int) -> float:
    """The threshold after group i: the midpoint to the next score, or the score itself at the end."""
    if i + 1 >= len(s):
        return float(s[i])
    mid = (s[i] + s[i + 1]) / 2
    return float(s[i] if mid == s[i + 1] else mid)


def best_accuracy(scores: np.ndarray, labels: np.ndarray, greater: bool) -> tuple[float, float]:
    """(accuracy, threshold): the best share of pairs right when every pair at or past the threshold is "same"."""
    s, tp, fp = _groups(scores, labels, greater)
    negatives = len(labels) - labels.sum()
    acc = (tp + (negatives - fp)) / len(labels)
    best = int(np.argmax(acc))
    none_same = negatives / len(labels)  # the threshold before the first score: every pair "different"
    if acc[best] <= none_same:
        return float(none_same), float(np.nextafter(s[0], np.inf if greater else -np.inf, dtype=np.float32))
    return float(acc[best]), _between(s, best)


def best_f1(scores: np.ndarray, labels: np.ndarray, greater: bool) -> tuple[float, float, float, float]:
    """(f1, precision, recall, threshold) at the threshold with the best F1."""
    s, tp, fp = _groups(scores, labels, greater)
    positives = labels.sum()
    precision, recall = tp / (tp + fp), tp / max(positives, 1)
    f1 = np.where(precision + recall > 0, 2 * precision * recall / np.maximum(precision + recall, 1e-300), 0.0)
    best = int(np.argmax(f1))
    if f1[best] <= 0:
        return 0.0, 0.0, 0.0, 0.0
    return float(f1[best]), float(precision[best]), float(recall[best]), _between(s, best)


def average_precision(scores: np.ndarray, labels: np.ndarray) -> float:
    """Sum over thresholds of precision times the recall gained (ties cut together), higher scores first."""
    _, tp, fp = _groups(scores, labels, True)
    precision = tp / (tp + fp)
    gained = np.diff(np.r_[0, tp]) / max(labels.sum(), 1)
    return float((precision * gained).sum())


def matthews(labels: np.ndarray, predicted: np.ndarray) -> float:
    """The Matthews correlation of binary predictions (0 where a row or column of the table is empty)."""
    tp = float(np.sum(predicted & (labels == 1)))
    tn = float(np.sum(~predicted & (labels == 0)))
    fp = float(np.sum(predicted & (labels == 0)))
    fn = float(np.sum(~predicted & (labels == 1)))
    denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


class BinaryClassificationEvaluator(SentenceEvaluator):
    """`{name}_{fn}_{metric}` for metric in METRICS; primary: the best average precision among the functions."""

    def __init__(
        self,
        sentences1: list[str],
        sentences2: list[str],
        labels: list[int],
        name: str = "",
        batch_size: int = 32,
        show_progress_bar: bool = False,
        write_csv: bool = True,
        truncate_dim: int | None = None,
        similarity_fn_names: list[str] | None = None,
    ) -> None:
        super().__init__()
        if not len(sentences1) == len(sentences2) == len(labels) or not set(labels) <= {0, 1}:
            raise ValueError("sentences1, sentences2 and labels must be as many, and labels 0 or 1")
        self.sentences1, self.sentences2, self.labels = list(sentences1), list(sentences2), list(labels)
        self.name, self.batch_size, self.show_progress_bar = name, batch_size, show_progress_bar
        self.write_csv, self.truncate_dim = write_csv, truncate_dim
        self.similarity_fn_names = list(similarity_fn_names or [])
        self.csv_file = f"binary_classification_evaluation{'_' + name if name else ''}_results.csv"

    def compute_metrics(self, model: Any) -> dict[str, dict[str, float]]:
        """Each similarity function's METRICS."""
        unique = list(dict.fromkeys([*self.sentences1, *self.sentences2]))
        vectors = embed(model, unique, self.batch_size, self.truncate_dim, show_progress=self.show_progress_bar)
        row = {t: i for i, t in enumerate(unique)}
        u = vectors[[row[t] for t in self.sentences1]]
        v = vectors[[row[t] for t in self.sentences2]]
        labels = np.asarray(self.labels, dtype=np.int64)
        out = {}
        for fn in self.similarity_fn_names:
            greater = fn in ("cosine", "dot")
            scores = pair_scores(u, v, fn) if greater else -pair_scores(u, v, fn)  # distances as distances
            acc, acc_threshold = best_accuracy(scores, labels, greater)
            f1, precision, recall, f1_threshold = best_f1(scores, labels, greater)
            predicted = scores >= f1_threshold if greater else scores <= f1_threshold
            ap = average_precision(scores if greater else -scores, labels)
            values = (acc, acc_threshold, f1, f1_threshold, precision, recall, ap, matthews(labels, predicted))
            out[fn] = dict(zip(METRICS, values, strict=True))
        return out

    def __call__(
        self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1
    ) -> dict[str, float]:
        """Every similarity function's metrics (the model's own by default)."""
        self.similarity_fn_names = self.similarity_fn_names or [model.similarity_fn_name]
        scores = self.compute_metrics(model)
        metrics = {f"{fn}_{m}": scores[fn][m] for fn in self.similarity_fn_names for m in METRICS}
        if len(self.similarity_fn_names) > 1:
            metrics.update({f"max_{m}": max(scores[fn][m] for fn in scores) for m in METRICS})
            self.primary_metric = "max_ap"
        else:
            self.primary_metric = f"{self.similarity_fn_names[0]}_ap"
        self.csv_headers = ["epoch", "steps", *metrics]
        self.write_csv_row(output_path, self.write_csv, [epoch, steps, *metrics.values()])
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics
