"""Helpers the benchmark scripts share: the STS benchmark reader and alternating timing."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STS_DIR = ROOT.parent / "shared" / "data" / "stsbenchmark"


def sts_sentences(split: str = "test") -> list[str]:
    """Both columns of an STS benchmark split: 2,758 sentences for test."""
    rows = [line.split("\t") for line in (STS_DIR / f"sts-{split}.csv").read_text(encoding="utf-8").splitlines()]
    return [r[5] for r in rows] + [r[6] for r in rows]


def alternate(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Time each callable `repeats` times, interleaved (a, b, a, b, ...) so drift hits both alike."""
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            seconds[name].append(time.perf_counter() - start)
    return seconds


def median(values: list[float]) -> float:
    """Median of a list of timings."""
    return statistics.median(values)
