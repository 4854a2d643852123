"""Training runs behind the paper tables: train, score on a dev set, record, resume where stopped."""

from __future__ import annotations

import logging
import shutil
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sbert.data import Dataset
from sbert.formats.layout import read_json, write_json_atomic
from sbert.training.config import Stage, TrainConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Run:
    """One cell of a table for one seed: a starting model, a head, the stages to train."""

    key: str  # the table cell, e.g. "classification/mean/u,v,|u-v|"
    model: str
    pooling: str | None
    stages: tuple[Stage, ...]
    seed: int
    max_seq_length: int | None = 128

    @property
    def run_id(self) -> str:
        """The record's name in the results file."""
        return f"{self.key}#seed{self.seed}"


class Results:
    """A JSON file of finished runs, rewritten atomically after each one: a killed job loses one run at most."""

    def __init__(self, path: Path, settings: dict[str, Any]) -> None:
        self.path = path
        stored = read_json(path) if path.is_file() else {"settings": settings, "runs": {}}
        if stored.get("settings") != settings:
            # Mixing runs of other settings (data sizes, model) into one mean would be silently wrong.
            raise ValueError(
                f"{path} holds runs made with other settings {stored.get('settings')}; use another --output"
            )
        self.data = stored

    def done(self, run: Run) -> bool:
        """Whether this run already has a score."""
        return self.has(run.key, run.seed)

    def record(self, run: Run, score: float, seconds: float) -> None:
        """Store a finished run."""
        self.put(run.key, run.seed, score, seconds)

    def has(self, key: str, seed: int = 0) -> bool:
        """Whether a cell has a score for this seed."""
        return f"{key}#seed{seed}" in self.data["runs"]

    def put(self, key: str, seed: int, score: float, seconds: float) -> None:
        """Store one cell's score for one seed (training runs, evaluations and speed readings alike)."""
        self.data["runs"][f"{key}#seed{seed}"] = {"key": key, "seed": seed, "score": score, "seconds": seconds}
        write_json_atomic(self.path, self.data)

    def summary(self, key: str) -> tuple[float, float, int]:
        """Mean, sample std (0 for one seed) and count of a cell's scores."""
        scores = [r["score"] for r in self.data["runs"].values() if r["key"] == key]
        if not scores:
            return float("nan"), float("nan"), 0
        std = statistics.stdev(scores) if len(scores) > 1 else 0.0
        return statistics.fmean(scores), std, len(scores)


def train_and_score(run: Run, work: Path, dev: Dataset) -> tuple[float, float]:
    """Train `run` into a scratch folder, score STS Spearman (x100) on `dev`, delete the folder."""
    from sbert.dense.model import SentenceEncoder
    from sbert.evaluation import evaluate_sts

    out = work / run.run_id.replace("/", "_").replace("|", "").replace("*", "x").replace(",", "-")
    seconds = train(run, out)
    score = evaluate_sts(SentenceEncoder.load(out), dev, show_progress=False)["spearman"]
    _remove(out)
    return score, seconds


def train(run: Run, out: Path) -> float:
    """Train `run` into `out` (leftovers of a killed attempt are removed first); the training seconds."""
    from sbert.training import Trainer

    _remove(out)
    config = TrainConfig(
        model=run.model,
        output=str(out),
        stages=run.stages,
        seed=run.seed,
        pooling=run.pooling,
        max_seq_length=run.max_seq_length,
        log_steps=1000,
    )
    started = time.monotonic()
    Trainer(config, show_progress=False).run()
    shutil.rmtree(Path(f"{out}.run"), ignore_errors=True)
    return time.monotonic() - started


def run_all(runs: Sequence[Run], results: Results, work: Path, dev: Dataset) -> None:
    """Run whatever is not recorded yet, in order, logging each score and time."""
    todo = [r for r in runs if not results.done(r)]
    for i, run in enumerate(todo, 1):
        score, seconds = train_and_score(run, work, dev)
        results.record(run, score, seconds)
        log.warning("[%d/%d] %s: %.2f (%.0f s)", i, len(todo), run.run_id, score, seconds)


def _remove(out: Path) -> None:
    for path in (out, Path(f"{out}.run")):
        if path.exists():
            shutil.rmtree(path)
