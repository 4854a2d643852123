"""`sbert eval` tasks: a FORMAT:PATH spec -> the data, the evaluator, and the paper-table column it fills."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from sbert.data import KNOWN_FORMATS, Dataset, load_dataset
from sbert.data.beir import IRCollection, read_beir, split_ir_spec
from sbert.data.common import DataFormatError
from sbert.data.pairs import read_sts_subset, sts_subsets
from sbert.data.senteval import TASK_FOLDERS, TransferTask, read_task, read_transfer_dir
from sbert.evaluation.common import Embedder

if TYPE_CHECKING:
    from sbert.reranker.model import CrossEncoder

TRANSFER_FORMATS = {name.lower(): name for name in TASK_FOLDERS}  # mr:, cr:, subj:, mpqa:, sst2:, trec:, mrpc:
TASK_FORMATS = (*KNOWN_FORMATS, "ir", "transfer", *TRANSFER_FORMATS)


@dataclass
class Task:
    """One thing to score: STS pairs (with optional subsets), triplets, a transfer task or a retrieval collection."""

    spec: str
    column: str  # the paper-table column: STS12..STS16, STSb, SICK-R, MR..MRPC, or the spec itself
    dataset: Dataset | None = None
    transfer: TransferTask | None = None
    subsets: dict[str, Dataset] = field(default_factory=dict)
    retrieval: IRCollection | None = None

    def sentences(self) -> int:
        """Sentences this task embeds (pairs count twice; a collection's queries and documents)."""
        if self.retrieval is not None:
            return len(self.retrieval.queries) + len(self.retrieval.corpus)
        if self.transfer is not None:
            parts = (self.transfer.pool, self.transfer.train, self.transfer.dev, self.transfer.test)
            return sum(len(texts) * len(texts[0]) for texts, _ in filter(None, parts))
        assert self.dataset is not None
        return len(self.dataset) * len(self.dataset.texts[0])


def load_tasks(spec: str, strict: bool = False) -> list[Task]:
    """The tasks a spec names (transfer:DIR may hold several); bad input names the file and line.

    `strict`: a retrieval collection's qrels naming unknown queries or documents is an error.
    """
    fmt, sep, path = spec.partition(":")
    if not sep or not path:
        raise DataFormatError(f"{spec!r}: expected FORMAT:PATH with FORMAT one of {', '.join(TASK_FORMATS)}")
    if fmt == "transfer":
        return [Task(f"{spec}#{t.name}", t.name, transfer=t) for t in read_transfer_dir(Path(path).expanduser())]
    if fmt == "ir":
        collection = read_beir(*split_ir_spec(path), strict=strict)
        return [Task(spec, f"ir:{collection.name}", retrieval=collection)]
    if fmt in TRANSFER_FORMATS:
        return [Task(spec, TRANSFER_FORMATS[fmt], transfer=read_task(TRANSFER_FORMATS[fmt], Path(path).expanduser()))]
    if fmt.partition("[")[0] not in KNOWN_FORMATS:  # `csv[columns=...]:FILE` carries options
        raise DataFormatError(f"{spec!r}: unknown task format {fmt!r}; known: {', '.join(TASK_FORMATS)}")
    task = Task(spec, _column(fmt, Path(path)), dataset=load_dataset(spec))
    if fmt == "sts":  # per-subset scores beside the year's pooled one
        task.subsets = {n: read_sts_subset(i, g) for n, (i, g) in sts_subsets(Path(path).expanduser()).items()}
    return [task]


def _column(fmt: str, path: Path) -> str:
    if fmt == "stsb":
        return "STSb"
    if fmt == "sick":
        return "SICK-R"
    year = re.search(r"STS ?(1[2-6])", str(path), re.IGNORECASE)
    return f"STS{year.group(1)}" if fmt == "sts" and year else f"{fmt}:{path.name}"


@dataclass
class Outcome:
    """A task's scores, plus what the plots need (cosine and gold of every STS pair)."""

    scores: dict[str, Any]
    cosine: np.ndarray | None = None
    gold: np.ndarray | None = None


def run_task(
    model: Embedder | CrossEncoder,
    task: Task,
    batch_size: int | None = None,
    seed: int = 0,
    transfer_protocol: str = "senteval",
    reranker: CrossEncoder | None = None,
    rerank_top: int = 100,
) -> Outcome:
    """Score one task; the scores carry the headline, the example count, sentences and wall time.

    A `reranker` (a CrossEncoder) reorders each query's top `rerank_top` hits of a retrieval task.
    """
    from sbert.evaluation.sts import cross_scores

    started = time.monotonic()
    outcome = Outcome({})
    if model.pair_scorer:  # a cross-encoder: it scores the pairs itself
        if task.dataset is None or task.dataset.kind != "pair-score":
            raise DataFormatError(f"{task.spec}: a cross-encoder scores sentence pairs only (STS tasks); "
                                  "to rerank retrieval, pass it as --reranker beside a bi-encoder --model")  # fmt: skip
        scores, outcome.cosine, outcome.gold = cross_scores(cast("CrossEncoder", model), task.dataset)
        outcome.scores = dict(scores)
        metric, size = "spearman", len(task.dataset)
    else:
        metric, size = _embedder_task(cast(Embedder, model), task, outcome, batch_size, seed, transfer_protocol,
                                      reranker, rerank_top)  # fmt: skip
    outcome.scores.update(headline=outcome.scores[metric], metric=metric, column=task.column, size=size,
                          sentences=task.sentences(), seconds=round(time.monotonic() - started, 2))  # fmt: skip
    return outcome


def _embedder_task(
    model: Embedder, task: Task, outcome: Outcome, batch_size: int | None, seed: int, transfer_protocol: str,
    reranker: CrossEncoder | None, rerank_top: int,
) -> tuple[str, int]:  # fmt: skip
    """Fill `outcome.scores` for an embedder (not a pair scorer); returns the headline metric and the size."""
    from sbert.evaluation.retrieval import evaluate_ir
    from sbert.evaluation.sts import sts_scores
    from sbert.evaluation.transfer import evaluate_transfer
    from sbert.evaluation.triplet import evaluate_triplets

    if task.retrieval is not None:
        outcome.scores = dict(evaluate_ir(model, task.retrieval, batch_size, reranker=reranker, rerank_top=rerank_top))
        return "ndcg@10", len(task.retrieval)
    if task.transfer is not None:
        outcome.scores = dict(evaluate_transfer(model, task.transfer, seed, protocol=transfer_protocol))
        return "accuracy", task.transfer.size()
    if task.dataset is not None and task.dataset.kind == "pair-score":
        scores, outcome.cosine, outcome.gold = sts_scores(model, task.dataset, batch_size)
        outcome.scores = dict(scores)
        if task.subsets:
            outcome.scores["subsets"] = {
                n: sts_scores(model, d, batch_size)[0]["spearman"] for n, d in task.subsets.items()
            }
        return "spearman", len(task.dataset)
    if task.dataset is not None and task.dataset.kind == "triplet":
        outcome.scores = dict(evaluate_triplets(model, task.dataset, batch_size))
        return "accuracy", len(task.dataset)
    kind = task.dataset.kind if task.dataset is not None else "?"
    raise DataFormatError(f"{task.spec}: no evaluator for {kind} data (STS pairs, triplets or transfer tasks)")


def scores_by_dimension(model: Any, task: Task, dims: list[int], batch_size: int | None = None) -> dict[int, float]:
    """The task's headline with the vectors cut to each of `dims` leading dimensions (Matryoshka models)."""
    settings = getattr(model, "settings", None)
    if settings is None:
        raise DataFormatError("--dims needs a SentenceEncoder (baselines have no leading dimensions to keep)")
    kept, out = settings.truncate_dim, {}
    try:
        for dim in dims:
            if not 0 < dim <= model.chain_dimension:
                raise DataFormatError(f"--dims {dim}: must be in [1, {model.chain_dimension}] for this model")
            settings.truncate_dim = dim
            out[dim] = float(run_task(model, task, batch_size).scores["headline"])
    finally:
        settings.truncate_dim = kept
    return out
