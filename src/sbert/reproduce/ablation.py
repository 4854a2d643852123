"""SBERT's ablation (Reimers & Gurevych 2019, Table 6), at the scale two CPU cores allow.

Classification on SNLI with MEAN / MAX / CLS pooling and the seven concatenations of (u, v,
|u-v|, u*v); regression on the STS benchmark with MEAN / MAX / CLS. Every cell: STS benchmark
dev Spearman of cosine (x100), several seeds, mean and std. Each run starts a fresh head on the
starting model's transformer and trains one pass over a seeded random subsample (the first
`--nli-pairs` / `--sts-pairs` examples of the shuffled epoch, through `max_steps`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sbert.reproduce.runs import Results, Run
from sbert.training.config import Objective, Stage

# The paper's Table 6 (BERT-base; NLI rows trained on SNLI + MultiNLI, STSb rows on STSb train).
PAPER_POOLING = {"mean": (80.78, 87.44), "max": (79.07, 69.92), "cls": (79.80, 86.62)}
PAPER_CONCAT = {
    "u,v": 66.04,
    "|u-v|": 69.78,
    "u*v": 70.54,
    "|u-v|,u*v": 78.37,
    "u,v,u*v": 77.44,
    "u,v,|u-v|": 80.78,
    "u,v,|u-v|,u*v": 80.44,
}
POOLINGS = ("mean", "max", "cls")
BATCH = 16


@dataclass(frozen=True)
class AblationSettings:
    """What the table is trained from: model, data, sizes, seeds."""

    model: str
    data: Path
    seeds: tuple[int, ...] = (0, 1, 2)
    nli_pairs: int = 2000
    sts_pairs: int = 2000

    def as_dict(self) -> dict[str, object]:
        """The settings a results file must match to be resumed."""
        return {"model": self.model, "data": str(self.data.resolve()), "seeds": list(self.seeds),
                "nli_pairs": self.nli_pairs, "sts_pairs": self.sts_pairs}  # fmt: skip


def _stage(objective: str, train: str, pairs: int, concat: str | None = None) -> Stage:
    options = {"concat": concat} if concat else {}
    return Stage((Objective(objective, train, options),), batch_size=BATCH, max_steps=max(1, pairs // BATCH))


def ablation_runs(s: AblationSettings) -> list[Run]:
    """Every (cell, seed) of the table."""
    nli = f"nli:{s.data / 'snli'}"
    sts = f"stsb:{s.data / 'stsbenchmark' / 'sts-train.csv'}"
    cells: list[tuple[str, str, Stage]] = []
    for pooling in POOLINGS:
        cells.append((f"classification/{pooling}/u,v,|u-v|", pooling, _stage("classification", nli, s.nli_pairs)))
    for concat in PAPER_CONCAT:
        if concat != "u,v,|u-v|":  # MEAN with (u, v, |u-v|) is already the first cell
            cells.append((f"classification/mean/{concat}", "mean", _stage("classification", nli, s.nli_pairs, concat)))
    for pooling in POOLINGS:
        cells.append((f"regression/{pooling}", pooling, _stage("regression", sts, s.sts_pairs)))
    return [Run(key, s.model, pooling, (stage,), seed) for seed in s.seeds for key, pooling, stage in cells]


def _cell(results: Results, key: str) -> str:
    mean, std, n = results.summary(key)
    return f"{mean:.2f} ± {std:.2f} (n={n})" if n else "not run"


def render(results: Results, s: AblationSettings) -> str:
    """The markdown table, ours beside the paper's."""
    lines = [
        "# SBERT ablation (paper Table 6)",
        "",
        f"Starting model: `{s.model}` (a fresh head on its transformer; the paper starts from BERT-base).",
        f"Classification: {s.nli_pairs} SNLI pairs (a seeded random subsample of dev+test; the paper trains on "
        f"SNLI + MultiNLI, 1M pairs). Regression: {s.sts_pairs} STS benchmark train pairs (the paper: all 5,749).",
        f"One epoch-pass, batch {BATCH}, lr 2e-5, seeds {', '.join(map(str, s.seeds))}. "
        "Score: STS benchmark dev Spearman of cosine x100, mean ± sample std over seeds.",
        "",
        "| | NLI (ours) | NLI (paper) | STSb (ours) | STSb (paper) |",
        "|---|---|---|---|---|",
        "| **Pooling strategy** | | | | |",
    ]
    for pooling in POOLINGS:
        nli_paper, sts_paper = PAPER_POOLING[pooling]
        lines.append(
            f"| {pooling.upper()} | {_cell(results, f'classification/{pooling}/u,v,|u-v|')} | {nli_paper:.2f} "
            f"| {_cell(results, f'regression/{pooling}')} | {sts_paper:.2f} |"
        )
    lines.append("| **Concatenation** (MEAN pooling) | | | | |")
    for concat, paper in PAPER_CONCAT.items():
        label = "(" + concat.replace("|", "\\|") + ")"
        lines.append(f"| {label} | {_cell(results, f'classification/mean/{concat}')} | {paper:.2f} | | |")
    seconds = sum(r["seconds"] for r in results.data["runs"].values())
    lines += ["", f"Training time over all runs: {seconds / 60:.1f} min (scoring and loading not included)."]
    return "\n".join(lines) + "\n"
