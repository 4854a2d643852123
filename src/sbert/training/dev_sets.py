"""Dev sets scored during training, and the one number that picks the best checkpoint.

One dev set: its headline metric (STS Spearman, triplet accuracy, IR nDCG@10). Several: the mean
of their headline metrics, or one named metric, `select = "SPEC:METRIC"` (e.g.
`ir:data/snli-ir:ndcg@10`), where SPEC is one of the dev specs as given.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sbert.data import Dataset
from sbert.data.beir import IRCollection, read_beir, split_ir_spec
from sbert.errors import SbertError
from sbert.evaluation import evaluate
from sbert.training.config import dev_specs

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder


@dataclass(frozen=True)
class DevSet:
    """A dev spec and its data, read before training starts."""

    spec: str
    data: Dataset | IRCollection | DevScorer


@runtime_checkable
class DevScorer(Protocol):
    """A dev set that scores a model itself (the drop-in trainer's evaluators): (selecting metric, all scores)."""

    def dev_scores(self, model: SentenceEncoder) -> tuple[str, dict[str, float]]:
        """The metric that selects checkpoints, and every score."""
        ...


@dataclass(frozen=True)
class DevScores:
    """One evaluation: the selecting metric's name and value, and every score (keyed SPEC:METRIC for several)."""

    metric: str
    score: float
    scores: dict[str, float]


def load_devs(dev: str | tuple[str, ...] | None, load: Callable[[str], Any]) -> list[DevSet]:
    """Read every dev set: `ir:DIR[:split]` is a retrieval collection, anything else a dataset."""
    return [DevSet(spec, read_beir(*split_ir_spec(spec[3:])) if spec.startswith("ir:") else load(spec))
            for spec in dev_specs(dev)]  # fmt: skip


def score_devs(model: SentenceEncoder, devs: list[DevSet], select: str) -> DevScores:
    """Evaluate every dev set and pick the number that decides the best checkpoint."""
    results = {dev.spec: dev.data.dev_scores(model) if isinstance(dev.data, DevScorer) else evaluate(model, dev.data)
               for dev in devs}  # fmt: skip
    if len(devs) == 1 and not select:
        metric, scores = next(iter(results.values()))
        return DevScores(metric, scores[metric], scores)
    flat = {f"{spec}:{name}": value for spec, (_, scores) in results.items() for name, value in scores.items()}
    if select:
        if select not in flat:
            spec = select.rpartition(":")[0]
            known = ", ".join(results[spec][1]) if spec in results else ""
            raise SbertError(f"select={select!r}: that dev set has no such metric (it has {known})")
        return DevScores(select, flat[select], flat)
    mean = statistics.fmean(scores[metric] for metric, scores in results.values())
    return DevScores("mean", mean, flat)
