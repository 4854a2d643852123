"""`InformationRetrievalEvaluator`: exact search of queries over a corpus, then the IR metrics at several k.

Keys `{name}_{fn}_{metric}@{k}` (accuracy, precision, recall, ndcg, mrr, map; fractions); primary:
nDCG at the largest k of the main (or best) similarity. Hits are ranked by (-score, corpus id), with
binary relevance, as sentence-transformers ranks them; the search is sbert's (evaluation/retrieval.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sbert.evaluation.evaluators.base import SentenceEvaluator, SimilarityFunction, embed, similarity_name
from sbert.evaluation.retrieval import dcg, ranked_ids, search

METRICS = ("accuracy", "precision", "recall", "ndcg", "mrr", "map")


def metrics_at(hits: Sequence[str], relevant: set[str], ks: dict[str, list[int]]) -> dict[str, float]:
    """One query's METRICS at each of its k (`ks["precision"]` is also recall's), as fractions."""
    found = [doc in relevant for doc in hits]
    first = next((i for i, f in enumerate(found) if f), None)
    out: dict[str, float] = {}
    for k in ks["accuracy"]:
        out[f"accuracy@{k}"] = float(any(found[:k]))
    for k in ks["precision"]:
        out[f"precision@{k}"] = sum(found[:k]) / k
        out[f"recall@{k}"] = sum(found[:k]) / len(relevant)
    for k in ks["mrr"]:
        out[f"mrr@{k}"] = 1 / (first + 1) if first is not None and first < k else 0.0
    for k in ks["ndcg"]:
        out[f"ndcg@{k}"] = dcg([float(f) for f in found[:k]]) / dcg([1.0] * min(k, len(relevant)))
    for k in ks["map"]:
        precisions = [sum(found[: i + 1]) / (i + 1) for i in range(min(k, len(found))) if found[i]]
        out[f"map@{k}"] = sum(precisions) / min(k, len(relevant))
    return out


class InformationRetrievalEvaluator(SentenceEvaluator):
    """Queries searched over the corpus with the model's similarity (queries and documents with their prompts)."""

    def __init__(
        self,
        queries: dict[str, str],
        corpus: dict[str, str],
        relevant_docs: dict[str, set[str]],
        corpus_chunk_size: int = 50000,
        # sentence-transformers' list defaults, never mutated here (copied into self.ks).
        mrr_at_k: list[int] = [10],  # noqa: B006
        ndcg_at_k: list[int] = [10],  # noqa: B006
        accuracy_at_k: list[int] = [1, 3, 5, 10],  # noqa: B006
        precision_recall_at_k: list[int] = [1, 3, 5, 10],  # noqa: B006
        map_at_k: list[int] = [100],  # noqa: B006
        show_progress_bar: bool = False,
        batch_size: int = 32,
        name: str = "",
        write_csv: bool = True,
        truncate_dim: int | None = None,
        score_functions: dict[str, Any] | None = None,
        main_score_function: str | SimilarityFunction | None = None,
        query_prompt: str | None = None,
        query_prompt_name: str | None = None,
        corpus_prompt: str | None = None,
        corpus_prompt_name: str | None = None,
        write_predictions: bool = False,
    ) -> None:
        super().__init__()
        self.query_ids = [q for q in queries if relevant_docs.get(q)]  # queries with an answer
        self.queries = [queries[q] for q in self.query_ids]
        self.corpus_ids, self.corpus = list(corpus), list(corpus.values())
        self.relevant_docs = relevant_docs
        self.ks = {"accuracy": list(accuracy_at_k), "precision": list(precision_recall_at_k), "mrr": list(mrr_at_k),
                   "ndcg": list(ndcg_at_k), "map": list(map_at_k)}  # fmt: skip
        self.corpus_chunk_size, self.batch_size, self.truncate_dim = corpus_chunk_size, batch_size, truncate_dim
        self.show_progress_bar, self.name, self.write_csv = show_progress_bar, name, write_csv
        self.score_functions = score_functions  # names are what counts here: sbert scores with its own functions
        self.main_score_function = similarity_name(main_score_function)
        self.prompts = (query_prompt, query_prompt_name, corpus_prompt, corpus_prompt_name)
        self.write_predictions = write_predictions
        self.csv_file = f"Information-Retrieval_evaluation{'_' + name if name else ''}_results.csv"

    def _hits(self, model: Any, function: str) -> list[list[str]]:
        """Each query's ranked corpus ids under `function`, as deep as the largest k."""
        query_prompt, query_name, corpus_prompt, corpus_name = self.prompts
        q = embed(model, self.queries, self.batch_size, self.truncate_dim, "query", query_name, query_prompt,
                  self.show_progress_bar)  # fmt: skip
        chunks = (embed(model, self.corpus[i : i + self.corpus_chunk_size], self.batch_size, self.truncate_dim,
                        "document", corpus_name, corpus_prompt)
                  for i in range(0, len(self.corpus), self.corpus_chunk_size))  # fmt: skip
        depth = max(k for ks in self.ks.values() for k in ks)
        scores, rows = search(q, chunks, depth, score_function=function)
        return ranked_ids(scores, rows, self.corpus_ids)

    def __call__(
        self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1
    ) -> dict[str, float]:
        """Every metric at every k for each score function (the model's own similarity by default)."""
        names = sorted(self.score_functions) if self.score_functions else [model.similarity_fn_name]
        metrics: dict[str, float] = {}
        for fn in names:
            per_query = [metrics_at(h, set(self.relevant_docs[q]), self.ks)
                         for h, q in zip(self._hits(model, fn), self.query_ids, strict=True)]  # fmt: skip
            for metric in METRICS:
                for k in self.ks["precision" if metric == "recall" else metric]:
                    metrics[f"{fn}_{metric}@{k}"] = float(np.mean([m[f"{metric}@{k}"] for m in per_query]))
        ndcg_k = max(self.ks["ndcg"])
        main = self.main_score_function or max(names, key=lambda fn: metrics[f"{fn}_ndcg@{ndcg_k}"])
        self.primary_metric = f"{main}_ndcg@{ndcg_k}"
        self.csv_headers = ["epoch", "steps", *metrics]
        self.write_csv_row(output_path, self.write_csv, [epoch, steps, *metrics.values()])
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics
