"""sentence-transformers 6.2's ranking evaluators: reranking, translation matching, paraphrase mining, and RRF.

Each embeds through `evaluators.base.embed` (sbert's encode, any sbert model), ranks with the project's
metrics (`cross_encoder.ranking_metrics`, `util.paraphrase_mining_embeddings`) and returns 6.2's keys as
fractions with `primary_metric`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sbert.evaluation.evaluators.base import SentenceEvaluator, embed
from sbert.evaluation.evaluators.cross_encoder import rank_metrics, ranking_metrics
from sbert.formats.layout import atomic_file
from sbert.native import native
from sbert.similarity import similarity_matrix, similarity_of
from sbert.util import paraphrase_mining_embeddings
from sbert.vectors.scores import cos_sim


def _as_list(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


class RerankingEvaluator(SentenceEvaluator):
    """MAP, MRR@k and nDCG@k (primary) of ranking each query's positives above its negatives by similarity."""

    def __init__(self, samples: list[dict[str, str | list[str]]], at_k: int = 10, name: str = "",
                 write_csv: bool = True,
                 similarity_fct: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
                 batch_size: int = 64, show_progress_bar: bool = False, use_batched_encoding: bool = True,
                 truncate_dim: int | None = None, mrr_at_k: int | None = None) -> None:  # fmt: skip
        super().__init__()
        given = list(samples.values()) if isinstance(samples, dict) else list(samples)
        rows = [{**s, "positive": _as_list(s["positive"]), "negative": _as_list(s["negative"])} for s in given]
        # As 6.2: a query without a positive or without a negative is left out.
        self.samples = [s for s in rows if s["positive"] and s["negative"]]
        self.at_k = mrr_at_k if mrr_at_k is not None else at_k
        self.name, self.write_csv, self.similarity_fct = name, write_csv, similarity_fct
        self.batch_size, self.show_progress_bar, self.truncate_dim = batch_size, show_progress_bar, truncate_dim
        # Every sample is embedded in one call either way: the scores do not depend on it.
        self.use_batched_encoding = use_batched_encoding
        self.csv_file = f"RerankingEvaluator{'_' + name if name else ''}_results_@{self.at_k}.csv"
        self.csv_headers = ["epoch", "steps", "MAP", f"MRR@{self.at_k}", f"NDCG@{self.at_k}"]
        self.primary_metric = f"ndcg@{self.at_k}"

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1,
                 steps: int = -1) -> dict[str, float]:  # fmt: skip
        """map, mrr@k and ndcg@k averaged over the samples."""
        queries = embed(model, [str(s["query"]) for s in self.samples], self.batch_size, self.truncate_dim, "query",
                        show_progress=self.show_progress_bar)  # fmt: skip
        docs = [d for s in self.samples for d in [*s["positive"], *s["negative"]]]
        doc_vectors = embed(model, docs, self.batch_size, self.truncate_dim, "document")
        per_query, offset = [], 0
        for query, sample in zip(queries, self.samples, strict=True):
            relevant = [1] * len(sample["positive"]) + [0] * len(sample["negative"])
            block = doc_vectors[offset : offset + len(relevant)]
            offset += len(relevant)
            per_query.append(ranking_metrics(relevant, self.scores(query, block, model), self.at_k))
        mrr, ndcg, ap = (float(np.mean(column)) for column in zip(*per_query, strict=True))
        self.write_csv_row(output_path, self.write_csv, [epoch, steps, ap, mrr, ndcg])
        metrics = self.prefix_name_to_metrics({"map": ap, f"mrr@{self.at_k}": mrr, f"ndcg@{self.at_k}": ndcg},
                                              self.name)  # fmt: skip
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics

    def scores(self, query: Any, documents: Any, model: Any) -> np.ndarray:
        """float64 scores of one query's vector against its documents' (n, dim) block.

        By `similarity_fct`, or with none given the model's own similarity, as 6.3 scores (6.2 took cosine).
        """
        if self.similarity_fct is None:  # the model's similarity function, by the one similarity policy
            name = similarity_of(native(model))
            return similarity_matrix(query[None], np.asarray(documents), name).reshape(-1).astype(np.float64)
        got = self.similarity_fct(torch.from_numpy(query)[None], torch.from_numpy(np.asarray(documents)))
        return got.reshape(-1).double().numpy()


def matched(scores: np.ndarray, texts: Sequence[str]) -> float:
    """The share of rows whose most similar column holds the same text as the row's own (6.2's rule)."""
    best = scores.argmax(axis=1)
    return float(np.mean([texts[i] == texts[j] for i, j in enumerate(best)]))


class TranslationEvaluator(SentenceEvaluator):
    """Whether each source's most similar target is its translation, both ways; primary: their mean."""

    def __init__(self, source_sentences: list[str], target_sentences: list[str], show_progress_bar: bool = False,
                 batch_size: int = 16, name: str = "", print_wrong_matches: bool = False, write_csv: bool = True,
                 truncate_dim: int | None = None) -> None:  # fmt: skip
        super().__init__()
        if len(source_sentences) != len(target_sentences):
            raise ValueError(f"source_sentences ({len(source_sentences)}) and target_sentences "
                             f"({len(target_sentences)}) must be as many")  # fmt: skip
        self.source_sentences, self.target_sentences = list(source_sentences), list(target_sentences)
        self.show_progress_bar, self.batch_size, self.name = show_progress_bar, batch_size, name
        self.print_wrong_matches, self.write_csv, self.truncate_dim = print_wrong_matches, write_csv, truncate_dim
        self.csv_file = f"translation_evaluation{'_' + name if name else ''}_results.csv"
        self.csv_headers = ["epoch", "steps", "src2trg", "trg2src"]
        self.primary_metric = "mean_accuracy"

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1,
                 steps: int = -1) -> dict[str, float]:  # fmt: skip
        """src2trg_accuracy, trg2src_accuracy and mean_accuracy (cosine)."""
        source = embed(model, self.source_sentences, self.batch_size, self.truncate_dim,
                       show_progress=self.show_progress_bar)  # fmt: skip
        target = embed(model, self.target_sentences, self.batch_size, self.truncate_dim,
                       show_progress=self.show_progress_bar)  # fmt: skip
        scores = cos_sim(torch.from_numpy(source), torch.from_numpy(target)).numpy()
        if self.print_wrong_matches:
            for i, j in enumerate(scores.argmax(axis=1)):
                if self.target_sentences[i] != self.target_sentences[j]:
                    print(f"Source {i} is most similar to target {j} instead of target {i}: "
                          f"{self.source_sentences[i]!r} -> {self.target_sentences[j]!r}")  # fmt: skip
        src2trg, trg2src = matched(scores, self.target_sentences), matched(scores.T, self.source_sentences)
        self.write_csv_row(output_path, self.write_csv, [epoch, steps, src2trg, trg2src])
        metrics = {"src2trg_accuracy": src2trg, "trg2src_accuracy": trg2src, "mean_accuracy": (src2trg + trg2src) / 2}
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics


def duplicate_graph(ids: set[str], pairs: Sequence[tuple[str, str]] | None,
                    given: dict[str, dict[str, bool]] | None) -> dict[str, dict[str, bool]]:  # fmt: skip
    """Map id -> id -> is-duplicate, from 6.2's `duplicates_dict` and/or `duplicates_list` (ids not mapped: ignored)."""
    graph: dict[str, dict[str, bool]] = defaultdict(lambda: defaultdict(bool))
    for a, row in (given or {}).items():
        graph[a].update(row)
    for a, b in pairs or []:
        if a in ids and b in ids:
            graph[a][b] = graph[b][a] = True
    return graph


def transitive_closure(graph: dict[str, dict[str, bool]]) -> dict[str, dict[str, bool]]:
    """Every two ids joined by a chain of duplicates marked duplicates of each other."""
    seen: set[str] = set()
    for start in list(graph):
        if start in seen:
            continue
        group, queue = {start}, [n for n, dup in graph[start].items() if dup]
        while queue:
            node = queue.pop()
            if node not in group:
                group.add(node)
                queue.extend(n for n, dup in graph[node].items() if dup)
        seen |= group
        for a in group:
            for b in group - {a}:
                graph[a][b] = True
    return graph


class ParaphraseMiningEvaluator(SentenceEvaluator):
    """Average precision (primary) and the best F1 of mining the known duplicate pairs among the sentences."""

    def __init__(self, sentences_map: dict[str, str], duplicates_list: list[tuple[str, str]] | None = None,
                 duplicates_dict: dict[str, dict[str, bool]] | None = None, add_transitive_closure: bool = False,
                 query_chunk_size: int = 5000, corpus_chunk_size: int = 100000, max_pairs: int = 500000,
                 top_k: int = 100, show_progress_bar: bool = False, batch_size: int = 16, name: str = "",
                 write_csv: bool = True, truncate_dim: int | None = None) -> None:  # fmt: skip
        super().__init__()
        self.ids, self.sentences = list(sentences_map), list(sentences_map.values())
        self.duplicates = duplicate_graph(set(self.ids), duplicates_list, duplicates_dict)
        if add_transitive_closure:
            self.duplicates = transitive_closure(self.duplicates)
        known = set(self.ids)
        pairs = {tuple(sorted((a, b))) for a, row in list(self.duplicates.items()) for b, dup in list(row.items())
                 if a in known and b in known and dup}  # fmt: skip
        self.total_num_duplicates = len(pairs)
        self.chunks, self.max_pairs, self.top_k = (query_chunk_size, corpus_chunk_size), max_pairs, top_k
        self.show_progress_bar, self.batch_size, self.name = show_progress_bar, batch_size, name
        self.write_csv, self.truncate_dim = write_csv, truncate_dim
        self.csv_file = f"paraphrase_mining_evaluation{'_' + name if name else ''}_results.csv"
        self.csv_headers = ["epoch", "steps", "precision", "recall", "f1", "threshold", "average_precision"]
        self.primary_metric = "average_precision"

    def _is_duplicate(self, a: str, b: str) -> bool:
        return bool(self.duplicates.get(a, {}).get(b) or self.duplicates.get(b, {}).get(a))

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1,
                 steps: int = -1) -> dict[str, float]:  # fmt: skip
        """average_precision, f1, precision, recall and the threshold of the best F1."""
        vectors = embed(model, self.sentences, self.batch_size, self.truncate_dim,
                        show_progress=self.show_progress_bar)  # fmt: skip
        pairs = paraphrase_mining_embeddings(torch.from_numpy(vectors), *self.chunks, self.max_pairs, self.top_k)
        best = {"f1": 0.0, "precision": 0.0, "recall": 0.0, "threshold": 0.0}
        total, found, before, ap = max(self.total_num_duplicates, 1), 0, 0, 0.0
        for n, (score, i, j) in enumerate(pairs):
            found += self._is_duplicate(self.ids[int(i)], self.ids[int(j)])
            if n + 1 < len(pairs) and pairs[n + 1][0] == score:
                continue  # tied scores are one cut
            if found > before:
                precision, recall = found / (n + 1), found / total
                ap += precision * (found - before)
                f1 = 2 * precision * recall / (precision + recall)
                if f1 > best["f1"]:
                    after = pairs[min(n + 1, len(pairs) - 1)][0]
                    best = {"f1": f1, "precision": precision, "recall": recall, "threshold": (score + after) / 2}
            before = found
        ap = ap / self.total_num_duplicates if self.total_num_duplicates else 0.0
        self.write_csv_row(
            output_path,
            self.write_csv,
            [epoch, steps, best["precision"], best["recall"], best["f1"], best["threshold"], ap],
        )
        metrics = self.prefix_name_to_metrics({"average_precision": ap, **best}, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics

    @staticmethod
    def add_transitive_closure(graph: dict[str, dict[str, bool]]) -> dict[str, dict[str, bool]]:
        """6.2's static method: `graph` with every chain of duplicates closed."""
        return transitive_closure(graph)


def fuse(rankings: Sequence[Sequence[str]], rrf_k: int) -> list[str]:
    """Reciprocal rank fusion: documents by the sum of 1 / (rrf_k + rank) over the rankings that hold them."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1 / (rrf_k + rank)
    return sorted(scores, key=lambda doc: scores[doc], reverse=True)  # stable: first-seen order breaks ties


class ReciprocalRankFusionEvaluator(SentenceEvaluator):
    """A dense and a sparse retriever's rankings of each query, and their reciprocal rank fusion (primary)."""

    def __init__(self, dense_samples: list[dict[str, Any]], sparse_samples: list[dict[str, Any]],
                 at_k: int = 10, rrf_k: int = 60, name: str = "", batch_size: int = 32, show_progress_bar: bool = False,
                 write_csv: bool = True, write_predictions: bool = False) -> None:  # fmt: skip
        super().__init__()
        if len(dense_samples) != len(sparse_samples):
            raise ValueError(f"Dense samples ({len(dense_samples)}) and sparse samples ({len(sparse_samples)}) "
                             "must have the same length")  # fmt: skip
        for i, (dense, sparse) in enumerate(zip(dense_samples, sparse_samples, strict=True)):
            if "query_id" not in dense or "query_id" not in sparse:
                raise ValueError(f"Sample at index {i} missing 'query_id' field")
            if dense["query_id"] != sparse["query_id"]:
                raise ValueError(f"Query ID mismatch at index {i}: {dense['query_id']} != {sparse['query_id']}")
        self.dense_samples, self.sparse_samples = dense_samples, sparse_samples
        self.at_k, self.rrf_k, self.name, self.batch_size = at_k, rrf_k, name, batch_size
        self.show_progress_bar, self.write_csv, self.write_predictions = show_progress_bar, write_csv, write_predictions
        stem = f"ReciprocalRankFusion_evaluation{'_' + name if name else ''}"
        self.csv_file, self.predictions_file = f"{stem}_results.csv", f"{stem}_predictions.jsonl"
        self.csv_headers = ["epoch", "steps", *(f"{side}_{m}" for side in ("Dense", "Sparse", "Fusion")
                                                for m in ("MAP", f"MRR@{at_k}", f"NDCG@{at_k}"))]  # fmt: skip
        self.primary_metric = f"ndcg@{at_k}"

    def __call__(self, output_path: str | None = None, epoch: int = -1, steps: int = -1) -> dict[str, float]:  # type: ignore[override]
        """dense_*, sparse_* and the fused map, mrr@k, ndcg@k (the samples hold the rankings: no model)."""
        sides: dict[str, list[tuple[float, float, float]]] = {"dense_": [], "sparse_": [], "": []}
        predictions = []
        for dense, sparse in zip(self.dense_samples, self.sparse_samples, strict=True):
            positive = _as_list(dense["positive"])
            fused = fuse([list(dense["documents"]), list(sparse["documents"])], self.rrf_k)
            for side, docs in (("dense_", dense["documents"]), ("sparse_", sparse["documents"]), ("", fused)):
                sides[side].append(rank_metrics(list(docs), positive, self.at_k))
            predictions.append({"query_id": dense["query_id"], "query": dense["query"], "positive": positive,
                                "documents": fused})  # fmt: skip
        metrics: dict[str, float] = {}
        for side, rows in sides.items():
            mrr, ndcg, ap = (float(np.mean(column)) for column in zip(*rows, strict=True))
            metrics |= {f"{side}map": ap, f"{side}mrr@{self.at_k}": mrr, f"{side}ndcg@{self.at_k}": ndcg}
        self.write_csv_row(output_path, self.write_csv, [epoch, steps, *metrics.values()])
        if output_path is not None and self.write_predictions:
            write_jsonl(Path(output_path) / self.predictions_file, predictions)
        return self.prefix_name_to_metrics(metrics, self.name)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """`rows` as JSON lines at `path`, written whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as f:
        f.write("".join(json.dumps(row) + "\n" for row in rows).encode("utf-8"))
