"""PNG plots of evaluation results: cosine vs gold per STS set, and scores compared across models."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sbert.errors import SbertError
from sbert.evaluation.report import TABLE1, TABLE5, Run, headline_by_column
from sbert.install_hint import install_hint


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
    except ImportError:
        raise SbertError(f"plots need matplotlib: {install_hint('eval')}") from None
    return plt


def scatter(cosine: np.ndarray, gold: np.ndarray, title: str, spearman: float, path: Path) -> None:
    """Cosine similarity against the gold score, one dot per pair."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 4), dpi=100)
    ax.scatter(gold * 5, cosine, s=4, alpha=0.35)
    ax.set_xlabel("gold score (0-5)")
    ax.set_ylabel("cosine similarity")
    ax.set_title(f"{title}: Spearman {spearman:.2f}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def bars(runs: Sequence[Run], path: Path) -> None:
    """Grouped bars: one group per task column, one bar per model."""
    plt = _pyplot()
    rows = [headline_by_column(r) for r in runs]
    order = [c for c in (*TABLE1, *TABLE5) if any(c in row for row in rows)]
    order += sorted({c for row in rows for c in row} - set(order))
    width = 0.8 / max(len(runs), 1)
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(order) + 2), 4), dpi=100)
    x = np.arange(len(order))
    for i, (run, row) in enumerate(zip(runs, rows, strict=True)):
        ax.bar(x + i * width - 0.4 + width / 2, [row.get(c, 0.0) for c in order], width, label=str(run["model"]))
    ax.set_xticks(x, order, rotation=30, ha="right")
    ax.set_ylabel("score x100")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def curves(series: dict[str, list[tuple[int, float]]], path: Path, title: str) -> None:
    """Dev metrics over training steps, one line each (from a run log's eval records)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for name, points in series.items():
        steps, values = zip(*points, strict=True) if points else ((), ())
        ax.plot(steps, values, marker="o", markersize=3, label=name)
    ax.set_xlabel("step")
    ax.set_ylabel("score x100")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
