"""sentence-transformers 6.2's cross-encoder evaluators: correlation, classification and reranking of pairs.

Each scores its pairs with the cross-encoder's `predict` (sbert's, through `sbert.native.native`; the
saved activation applied, as 6.2 applies it) and returns 6.2's keys, as fractions, with `primary_metric`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import pearsonr, spearmanr

from sbert.evaluation.evaluators.base import SentenceEvaluator
from sbert.evaluation.evaluators.binary import average_precision, best_accuracy, best_f1
from sbert.evaluation.retrieval import dcg
from sbert.native import native


def pair_predictions(model: Any, pairs: Sequence[Sequence[str]], batch_size: int, prompt_name: str | None,
                     show_progress: bool | None) -> np.ndarray:  # fmt: skip
    """The model's activated scores of `pairs`: (n,) for one output, (n, labels) otherwise."""
    rows = [(str(p[0]), str(p[1])) for p in pairs]
    return np.asarray(native(model).predict(rows, batch_size=batch_size, prompt_name=prompt_name,
                                            show_progress=bool(show_progress)), dtype=np.float32)  # fmt: skip


class _PairEvaluator(SentenceEvaluator):
    """What the three share: the name, prompt, batch size and the CSV file named after the class."""

    def __init__(self, name: str, prompt_name: str | None, batch_size: int, show_progress_bar: bool | None,
                 write_csv: bool) -> None:  # fmt: skip
        super().__init__()
        self.name, self.prompt_name, self.batch_size = name, prompt_name, batch_size
        self.show_progress_bar, self.write_csv = show_progress_bar, write_csv
        self.csv_file = f"{type(self).__name__}{'_' + name if name else ''}_results.csv"

    def _finish(self, model: Any, metrics: dict[str, float], output_path: str | None, epoch: int,
                steps: int) -> dict[str, float]:  # fmt: skip
        self.write_csv_row(output_path, self.write_csv, [epoch, steps, *metrics.values()])
        out = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, out, epoch, steps)
        return out


class CrossEncoderCorrelationEvaluator(_PairEvaluator):
    """Pearson and Spearman correlation of the pairs' scores with gold scores; primary: Spearman."""

    def __init__(self, sentence_pairs: list[list[str]], scores: list[float], name: str = "",
                 prompt_name: str | None = None, batch_size: int = 32, show_progress_bar: bool | None = None,
                 write_csv: bool = True) -> None:  # fmt: skip
        super().__init__(name, prompt_name, batch_size, show_progress_bar, write_csv)
        self.sentence_pairs, self.scores = sentence_pairs, list(scores)
        self.csv_headers = ["epoch", "steps", "Pearson_Correlation", "Spearman_Correlation"]
        self.primary_metric = "spearman"

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1,
                 steps: int = -1) -> dict[str, float]:  # fmt: skip
        """{name}_pearson and {name}_spearman."""
        predicted = pair_predictions(model, self.sentence_pairs, self.batch_size, self.prompt_name,
                                     self.show_progress_bar)  # fmt: skip
        metrics = {"pearson": float(pearsonr(self.scores, predicted)[0]),
                   "spearman": float(spearmanr(self.scores, predicted)[0])}  # fmt: skip
        return self._finish(model, metrics, output_path, epoch, steps)


class CrossEncoderClassificationEvaluator(_PairEvaluator):
    """One output: best accuracy / F1 thresholds and average precision; several: macro, micro, weighted F1."""

    def __init__(self, sentence_pairs: list[list[str]], labels: list[int], *, name: str = "",
                 prompt_name: str | None = None, batch_size: int = 32, show_progress_bar: bool | None = None,
                 write_csv: bool = True, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(name, prompt_name, batch_size, show_progress_bar, write_csv)
        if len(sentence_pairs) != len(labels):
            raise ValueError("sentence_pairs and labels must have the same length")
        self.sentence_pairs, self.labels = sentence_pairs, np.asarray(labels)

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1,
                 steps: int = -1) -> dict[str, float]:  # fmt: skip
        """Binary: accuracy, f1, precision, recall, average_precision (primary); else the three F1 averages."""
        predicted = pair_predictions(model, self.sentence_pairs, self.batch_size, self.prompt_name,
                                     self.show_progress_bar)  # fmt: skip
        if predicted.ndim == 1:
            labels = self.labels.astype(np.int64)
            acc, acc_threshold = best_accuracy(predicted, labels, True)
            f1, precision, recall, f1_threshold = best_f1(predicted, labels, True)
            metrics = {"accuracy": acc, "accuracy_threshold": acc_threshold, "f1": f1, "f1_threshold": f1_threshold,
                       "precision": precision, "recall": recall,
                       "average_precision": average_precision(predicted, labels)}  # fmt: skip
            self.csv_headers = ["epoch", "steps", "Accuracy", "Accuracy_Threshold", "F1", "F1_Threshold",
                                "Precision", "Recall", "Average_Precision"]  # fmt: skip
            self.primary_metric = "average_precision"
        else:
            metrics = f1_averages(self.labels, predicted.argmax(axis=1))
            self.csv_headers = ["epoch", "steps", "Macro_F1", "Micro_F1", "Weighted_F1"]
            self.primary_metric = "f1_macro"
        return self._finish(model, metrics, output_path, epoch, steps)


def f1_averages(labels: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Macro, micro and weighted F1 over the classes that occur in `labels` or `predicted`."""
    classes = np.union1d(labels, predicted)
    f1s, support = [], []
    for c in classes:
        tp = float(np.sum((predicted == c) & (labels == c)))
        denominator = float(np.sum(predicted == c) + np.sum(labels == c))
        f1s.append(2 * tp / denominator if denominator else 0.0)
        support.append(float(np.sum(labels == c)))
    micro = float(np.mean(predicted == labels))  # single-label: micro F1 is the accuracy
    weighted = float(np.dot(f1s, support) / sum(support)) if sum(support) else 0.0
    return {"f1_macro": float(np.mean(f1s)), "f1_micro": micro, "f1_weighted": weighted}


def ranking_metrics(relevant: Sequence[int], scores: np.ndarray, at_k: int,
                    positives: int | None = None) -> tuple[float, float, float]:  # fmt: skip
    """(MRR@k, nDCG@k, average precision) of one query's documents ranked by `scores`.

    `positives`: how many relevant documents the query has in all, some maybe absent from `relevant`. As 6.3,
    AP and nDCG are normalised by them (AP scaled by the share ranked, the ideal DCG over min(positives, k)).
    """
    found = int(sum(relevant))
    if not found:
        return 0.0, 0.0, 0.0
    total = max(positives or 0, found)
    order = np.argsort(scores)[::-1]  # as sentence-transformers ranks: ties put the later document first
    mrr = next((1 / (rank + 1) for rank, i in enumerate(order[:at_k]) if relevant[i]), 0.0)
    ideal = dcg([1] * min(total, at_k))
    ndcg = dcg([relevant[i] for i in order[:at_k]]) / ideal if ideal else 0.0
    ap = average_precision(scores.astype(np.float64), np.asarray(relevant, dtype=np.int64)) * found / total
    return float(mrr), ndcg, ap


def rank_metrics(documents: Sequence[str], positive: list[str], at_k: int) -> tuple[float, float, float]:
    """(MRR@k, nDCG@k, AP) of a ranked list, normalised by every positive, those it misses too (6.3's rule)."""
    relevant = [int(d in positive) for d in documents]
    return ranking_metrics(relevant, np.arange(len(relevant), 0, -1, dtype=np.float64), at_k, len(positive))


class CrossEncoderRerankingEvaluator(_PairEvaluator):
    """MAP, MRR@k and nDCG@k (primary) of reranking each query's documents; `base_*` for the given order.

    Each sample has a `query`, its `positive` text(s), and either `negative` texts or the retriever's
    `documents` in their order (positives missing from those count as ranked last for the base metrics,
    and with `always_rerank_positives` they are reranked anyway).
    """

    def __init__(self, samples: list[dict[str, Any]] | dict[str, dict[str, Any]], at_k: int = 10,
                 always_rerank_positives: bool = True, name: str = "", prompt_name: str | None = None,
                 batch_size: int = 64, show_progress_bar: bool = False, write_csv: bool = True,
                 mrr_at_k: int | None = None) -> None:  # fmt: skip
        super().__init__(name, prompt_name, batch_size, show_progress_bar, write_csv)
        self.samples = list(samples.values()) if isinstance(samples, dict) else list(samples)
        self.at_k = mrr_at_k if mrr_at_k is not None else at_k
        self.always_rerank_positives = always_rerank_positives
        self.csv_file = f"CrossEncoderRerankingEvaluator{'_' + name if name else ''}_results_@{self.at_k}.csv"
        self.csv_headers = ["epoch", "steps", "MAP", f"MRR@{self.at_k}", f"NDCG@{self.at_k}"]
        self.primary_metric = f"ndcg@{self.at_k}"

    def _candidates(self, sample: dict[str, Any]) -> tuple[list[str], list[int], tuple[float, ...] | None, int]:
        """The documents to rerank, their relevance, the given order's base metrics (or None) and the positives' count.

        Positives left out of the documents to rerank still count in the reranked metrics (6.3's normalisation).
        """
        for key in ("query", "positive"):
            if key not in sample:
                raise ValueError(f"CrossEncoderRerankingEvaluator requires a {key!r} key in each sample.")
        if ("negative" in sample) == ("documents" in sample):
            raise ValueError("CrossEncoderRerankingEvaluator requires exactly one of 'negative' and 'documents' "
                             "in each sample.")  # fmt: skip
        positive = sample_positives(sample)
        documents = sample.get("documents")
        if documents is None:
            docs = positive + list(sample["negative"])
            return docs, [1] * len(positive) + [0] * (len(docs) - len(positive)), None, len(positive)
        relevant = [int(d in positive) for d in documents]
        base = rank_metrics(list(documents), positive, self.at_k)
        if self.always_rerank_positives:
            docs = positive + [d for d in documents if d not in positive]
            return docs, [1] * len(positive) + [0] * (len(docs) - len(positive)), base, len(positive)
        return list(documents), relevant, base, len(positive)

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1,
                 steps: int = -1) -> dict[str, float]:  # fmt: skip
        """map, mrr@k, ndcg@k (and base_map, base_mrr@k, base_ndcg@k when samples carry `documents`)."""
        plans = [self._candidates(sample) for sample in self.samples]
        pairs = [(s["query"], d) for s, (docs, rel, _, _) in zip(self.samples, plans, strict=True) if sum(rel)
                 for d in docs]  # fmt: skip
        scores = pair_predictions(model, pairs, self.batch_size, self.prompt_name, self.show_progress_bar)
        reranked, bases, offset = [], [], 0
        for docs, relevant, base, positives in plans:
            if base is not None:
                bases.append(base)
            if not sum(relevant):
                reranked.append((0.0, 0.0, 0.0))
                continue
            reranked.append(ranking_metrics(relevant, scores[offset : offset + len(docs)], self.at_k, positives))
            offset += len(docs)
        mrr, ndcg, ap = (float(np.mean(column)) for column in zip(*reranked, strict=True))
        metrics = {"map": ap, f"mrr@{self.at_k}": mrr, f"ndcg@{self.at_k}": ndcg}
        self.write_csv_row(output_path, self.write_csv, [epoch, steps, ap, mrr, ndcg])
        if bases:
            base_mrr, base_ndcg, base_ap = (float(np.mean(column)) for column in zip(*bases, strict=True))
            metrics |= {"base_map": base_ap, f"base_mrr@{self.at_k}": base_mrr, f"base_ndcg@{self.at_k}": base_ndcg}
        out = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, out, epoch, steps)
        return out


def sample_positives(sample: dict[str, Any]) -> list[str]:
    """A reranking sample's positive text(s) as a list."""
    return [sample["positive"]] if isinstance(sample["positive"], str) else list(sample["positive"])
