"""Seeded training experiments for the follow-up papers: run cells x seeds, resume, print a table."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import STS_DIR
from sbert.data import load_dataset
from sbert.reproduce.runs import Results, Run, run_all
from sbert.training.config import Objective, Stage

TRAIN = f"stsb:{STS_DIR / 'sts-train.csv'}"
MODEL = "all-MiniLM-L6-v2"


def regression(lr: float = 2e-5) -> Stage:
    """SBERT's STS benchmark recipe: regression, 1 epoch, batch 16."""
    return Stage((Objective("regression", TRAIN),), batch_size=16, lr=lr)


def infomax(text: Path, lr: float) -> Stage:
    """IS-BERT's recipe: infomax on unlabelled sentences, 1 epoch, batch 32."""
    return Stage((Objective("infomax", f"text:{text}"),), batch_size=32, lr=lr)


def unlabelled_train_sentences(work: Path) -> Path:
    """The distinct sentences of the STS benchmark train split, one per line (scores dropped)."""
    dataset = load_dataset(TRAIN)
    sentences = list(dict.fromkeys(s for pair in dataset.texts for s in pair))
    path = work / "sts-train-sentences.txt"
    path.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    return path


def run_cells(cells: dict[str, tuple[str, tuple[Stage, ...]]], seeds: Sequence[int], output: Path) -> Results:
    """Train every (cell, seed) not yet in OUTPUT/results.json; score STS benchmark test Spearman."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    output.mkdir(parents=True, exist_ok=True)
    settings = {"cells": {k: [p, repr(s)] for k, (p, s) in cells.items()}, "seeds": list(seeds)}
    results = Results(output / "results.json", settings)
    runs = [Run(key, MODEL, pooling, stages, seed) for seed in seeds for key, (pooling, stages) in cells.items()]
    test = load_dataset(f"stsb:{STS_DIR / 'sts-test.csv'}")
    run_all(runs, results, output / "work", test)
    return results


def table(results: Results, keys: Sequence[str]) -> str:
    """Markdown: one row per cell with mean, std, seeds and training time."""
    lines = ["| setting | STSb test Spearman (mean ± std) | per seed | train s (mean) |", "|---|---|---|---|"]
    for key in keys:
        mean, std, n = results.summary(key)
        runs = [r for r in results.data["runs"].values() if r["key"] == key]
        per_seed = ", ".join(f"{r['score']:.2f}" for r in sorted(runs, key=lambda r: r["seed"]))
        seconds = sum(r["seconds"] for r in runs) / max(len(runs), 1)
        lines.append(f"| {key} | {mean:.2f} ± {std:.2f} (n={n}) | {per_seed} | {seconds:.0f} |")
    return "\n".join(lines)
