"""Cross-validated fine-tuning: the paper's Argument Facet Similarity protocol (Table 3), on any scored pairs.

Two split schemes over one file of scored pairs:
- k-fold: a seeded shuffle cut into k parts; each part is scored once by a model fine-tuned on the rest;
- cross-topic (leave one topic out): train on every other topic, score the held-out one, which
  measures how well the model carries to a topic it never saw.
Each fold starts again from the same model and is fine-tuned with the regression objective (or, as the
paper's BERT baseline, as a cross-encoder), then scored by Spearman and Pearson (x100) on its held-out
pairs, beside the score of the starting model on the same pairs. The summary is the mean over folds.
Finished folds are stored after each one, so a killed run resumes.

An experiment runner, like the rest of reproduce/: it imports training and evaluation, and neither
imports it.
"""

from __future__ import annotations

import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sbert.data import Dataset
from sbert.errors import SbertError
from sbert.formats.layout import read_json, write_json_atomic

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder


@dataclass(frozen=True)
class Fold:
    """One split: the rows fine-tuned on and the rows scored."""

    name: str
    train: list[int]
    test: list[int]


def kfold(n: int, k: int, seed: int) -> list[Fold]:
    """The k folds of a seeded permutation of range(n); every row is held out exactly once."""
    if not 2 <= k <= n:
        raise SbertError(f"--folds {k}: needs 2 <= k <= {n} (the number of pairs)")
    parts = np.array_split(np.random.default_rng(seed).permutation(n), k)
    return [
        Fold(f"fold{i + 1}", sorted(int(r) for j, p in enumerate(parts) if j != i for r in p), sorted(map(int, part)))
        for i, part in enumerate(parts)
    ]


def by_topic(groups: tuple[str, ...], topic_groups: int | None = None) -> list[Fold]:
    """One fold per topic (or per group of topics): train on all other topics, score the held-out ones.

    `topic_groups` K deals the sorted topics into K groups in turn (28 AFS topics -> 4 folds of 7).
    """
    topics = sorted(set(groups))
    if len(topics) < 2:
        raise SbertError(f"cross-topic evaluation needs at least two topics; the data has {topics or 'none'}")
    if topic_groups is not None and not 2 <= topic_groups <= len(topics):
        raise SbertError(f"--topic-groups {topic_groups}: needs 2 <= K <= {len(topics)} (the number of topics)")
    count = topic_groups or len(topics)
    held_out = [set(topics[k::count]) for k in range(count)]
    return [
        Fold("+".join(sorted(held)), [i for i, g in enumerate(groups) if g not in held],
             [i for i, g in enumerate(groups) if g in held])
        for held in held_out
    ]  # fmt: skip


@dataclass(frozen=True)
class CrossValSettings:
    """What every fold is trained with; a results file only resumes runs of the same settings."""

    model: str
    data: str
    scheme: str = "kfold"  # kfold | topic
    folds: int = 10
    seed: int = 0
    epochs: int = 1
    batch_size: int = 16
    lr: float = 2e-5
    cross_encoder: bool = False
    max_seq_length: int | None = None  # None: the model's own limit
    topic_groups: int | None = None  # topic scheme: held-out groups of topics (None: one topic per fold)


def splits(settings: CrossValSettings, data: Dataset) -> list[Fold]:
    """The folds the settings name."""
    if settings.scheme == "topic":
        if not data.groups:
            raise SbertError(f"{data.name}: no topics; cross-topic evaluation needs topic-pairs data")
        return by_topic(data.groups, settings.topic_groups)
    if settings.scheme == "kfold":
        return kfold(len(data), settings.folds, settings.seed)
    raise SbertError(f"scheme {settings.scheme!r}: use kfold or topic")


def score_fold(settings: CrossValSettings, data: Dataset, fold: Fold, work: Path) -> dict[str, Any]:
    """Fine-tune a fresh copy of the model on the fold's training rows, score its held-out rows (before and after)."""
    from sbert.evaluation.sts import cross_scores, sts_scores

    train, test = data.subset(fold.train, f"{fold.name}:train"), data.subset(fold.test, f"{fold.name}:test")
    started = time.monotonic()
    if settings.cross_encoder:
        from sbert.reranker.model import CrossEncoder
        from sbert.training.cross_encoder import CrossFitSettings, fit_cross_encoder

        cross = CrossEncoder.new(settings.model, max_seq_length=settings.max_seq_length)
        before = cross_scores(cross, test)[0]  # an untrained regression head: near chance
        fit = CrossFitSettings(settings.epochs, settings.batch_size, settings.lr, settings.seed)
        fit_cross_encoder(cross, train, fit)
        scores = cross_scores(cross, test)[0]
    else:
        before = sts_scores(_starting_model(settings), test, show_progress=False)[0]
        scores = sts_scores(_fine_tune(settings, train, work / fold.name), test, show_progress=False)[0]
        shutil.rmtree(work / fold.name, ignore_errors=True)
    return {"spearman": scores["spearman"], "pearson": scores["pearson"], "spearman_before": before["spearman"],
            "train": len(train), "test": len(test), "seconds": round(time.monotonic() - started, 1)}  # fmt: skip


def _starting_model(settings: CrossValSettings) -> SentenceEncoder:
    from sbert.dense.model import SentenceEncoder

    model = SentenceEncoder.load(settings.model)
    if settings.max_seq_length is not None:
        model.max_seq_length = settings.max_seq_length
    return model


def _fine_tune(settings: CrossValSettings, train: Dataset, out: Path) -> SentenceEncoder:
    from sbert.dense.model import SentenceEncoder
    from sbert.training import Trainer
    from sbert.training.config import Objective, Stage, TrainConfig

    for leftover in (out, Path(f"{out}.run")):  # a killed attempt at this fold
        shutil.rmtree(leftover, ignore_errors=True)
    spec = f"memory:{train.name}"
    stage = Stage((Objective("regression", spec),), epochs=settings.epochs, batch_size=settings.batch_size,
                  lr=settings.lr)  # fmt: skip
    config = TrainConfig(settings.model, str(out), (stage,), seed=settings.seed,
                         max_seq_length=settings.max_seq_length, log_steps=1000)  # fmt: skip
    Trainer(config, show_progress=False, datasets={spec: train}).run()
    model = SentenceEncoder.load(out)
    shutil.rmtree(Path(f"{out}.run"), ignore_errors=True)
    return model


def cross_validate(
    settings: CrossValSettings,
    data: Dataset,
    results: Path,
    work: Path,
    max_folds: int | None = None,
    on_fold: Callable[[dict[str, Any], str, float], None] | None = None,
) -> dict[str, Any]:
    """Run the folds not yet in `results` (JSON, rewritten after each fold); return the whole record.

    `max_folds` stops once that many folds are done (a rerun with a larger cap goes on);
    `on_fold(record, fold name, estimated seconds left)` is called after each new fold.
    """
    record: dict[str, Any] = {"settings": asdict(settings), "folds": {}}
    if results.is_file():
        stored = read_json(results)
        if stored.get("settings") != record["settings"]:
            raise SbertError(f"{results} holds folds made with other settings; use another --output")
        record = stored
    folds = splits(settings, data)[:max_folds]
    todo = [f for f in folds if f.name not in record["folds"]]
    spent: list[float] = []
    for done, fold in enumerate(todo, start=1):
        started = time.monotonic()
        record["folds"][fold.name] = score_fold(settings, data, fold, work)
        record["summary"] = summary(record["folds"])
        write_json_atomic(results, record)
        spent.append(time.monotonic() - started)
        if on_fold is not None:
            on_fold(record, fold.name, statistics.fmean(spent) * (len(todo) - done))
    _remove_if_empty(work)
    return record


def _remove_if_empty(folder: Path) -> None:
    """The scratch folder goes once no fold left anything in it."""
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


def summary(folds: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Mean and sample std over folds of Spearman and Pearson."""
    out: dict[str, float] = {"folds": len(folds)}
    for metric in ("spearman", "pearson", "spearman_before"):
        values = [f[metric] for f in folds.values() if metric in f]
        if not values:
            continue
        out[metric] = statistics.fmean(values)
        out[f"{metric}_std"] = statistics.stdev(values) if len(values) > 1 else 0.0
    return out
