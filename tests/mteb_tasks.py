"""Small local mteb tasks (STS, retrieval, reranking) built from the benchmark data in place: nothing downloaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

GENERAL: dict[str, Any] = {
    "description": "A local task built from the sbert test data.", "reference": "https://example.org/sbert",
    "dataset": {"path": "local", "revision": "local"}, "category": "t2t", "eval_splits": ["test"],
    "eval_langs": ["eng-Latn"], "date": ("2012-01-01", "2012-12-31"), "dialect": ["Written"], "domains": [],
    "task_subtypes": [], "license": "cc-by-4.0", "annotations_creators": "human-annotated", "modalities": ["text"],
    "sample_creation": "found", "bibtex_citation": "",
}  # fmt: skip


def sts_rows(data: Path, n: int) -> tuple[list[str], list[str], list[float]]:
    """The first n STS benchmark test pairs and their 0-5 scores (tab-separated, columns 4, 5, 6)."""
    one, two, scores = [], [], []
    for line in (data / "stsbenchmark" / "sts-test.csv").read_text(encoding="utf-8").splitlines()[:n]:
        cells = line.split("\t")
        scores.append(float(cells[4]))
        one.append(cells[5])
        two.append(cells[6])
    return one, two, scores


def snli_entailments(data: Path, n: int) -> list[tuple[str, str]]:
    """The first n (premise, hypothesis) pairs labelled entailment in SNLI dev."""
    folder = data / "snli"
    rows = zip(*((folder / f"{name}.dev").read_text(encoding="utf-8").splitlines() for name in ("s1", "s2", "labels")),
               strict=True)  # fmt: skip
    pairs = [(a, b) for a, b, label in rows if label.strip() == "entailment"]
    return list(dict.fromkeys(pairs))[:n]


def build_tasks(data: Path) -> dict[str, Any]:
    """An STS task (100 STSb test pairs), a retrieval task and a reranking task (60 SNLI dev queries)."""
    from datasets import Dataset, DatasetDict
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.abstasks.sts import AbsTaskSTS
    from mteb.abstasks.task_metadata import TaskMetadata

    one, two, scores = sts_rows(data, 100)
    pairs = snli_entailments(data, 60)
    queries = Dataset.from_list([{"id": f"q{i}", "text": a} for i, (a, _) in enumerate(pairs)])
    corpus = Dataset.from_list([{"id": f"d{i}", "text": b, "title": ""} for i, (_, b) in enumerate(pairs)])
    relevant = {f"q{i}": {f"d{i}": 1} for i in range(len(pairs))}
    candidates = {f"q{i}": [f"d{(i + k) % len(pairs)}" for k in range(5)] for i in range(len(pairs))}

    class LocalSTS(AbsTaskSTS):
        metadata = TaskMetadata(type="STS", name="SbertLocalSTS", main_score="cosine_spearman", **GENERAL)
        min_score, max_score = 0, 5

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            self.dataset = DatasetDict({"test": Dataset.from_dict({"sentence1": one, "sentence2": two,
                                                                   "score": scores})})  # fmt: skip
            self.data_loaded = True

    def retrieval_task(kind: str, name: str, main: str, top_ranked: dict[str, list[str]] | None) -> Any:
        class Local(AbsTaskRetrieval):
            metadata = TaskMetadata(type=kind, name=name, main_score=main, **GENERAL)

            def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
                split = {"queries": queries, "corpus": corpus, "relevant_docs": relevant, "top_ranked": top_ranked}
                self.dataset = {"default": {"test": split}}
                self.data_loaded = True

        return Local()

    return {"sts": LocalSTS(), "retrieval": retrieval_task("Retrieval", "SbertLocalRetrieval", "ndcg_at_10", None),
            "reranking": retrieval_task("Reranking", "SbertLocalReranking", "map_at_1000", candidates)}  # fmt: skip
