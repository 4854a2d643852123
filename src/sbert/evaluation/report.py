"""Results files and the paper's table layouts (Table 1: STS; Table 5: transfer), one row per model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sbert.errors import SbertError
from sbert.formats.layout import atomic_file, write_json_atomic

TABLE1 = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R")
TABLE5 = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
Run = dict[str, Any]  # {"model": name, "tasks": {spec: scores}}


def read_results(path: Path) -> Run:
    """A results.json written by `sbert eval`, checked enough to report on."""
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SbertError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise SbertError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(run, dict) or not isinstance(run.get("tasks"), dict) or "model" not in run:
        raise SbertError(f"{path}: not an `sbert eval` results.json (needs model and tasks)")
    return run


def write_results(folder: Path, run: Run) -> None:
    """results.json (every score) and results.md (the paper tables plus every task)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(folder / "results.json", run)
    with atomic_file(folder / "results.md") as f:
        f.write(render([run]).encode("utf-8"))


def headline_by_column(run: Run) -> dict[str, float]:
    """Paper column -> headline score of one run."""
    return {scores["column"]: scores["headline"] for scores in run["tasks"].values() if "column" in scores}


def _table(title: str, columns: Sequence[str], runs: Sequence[Run]) -> list[str]:
    rows = [headline_by_column(r) for r in runs]
    present = [c for c in columns if any(c in row for row in rows)]
    if not present:
        return []
    lines = [f"## {title}", "", "| Model | " + " | ".join(present) + " | Avg. |", "|---" * (len(present) + 2) + "|"]
    for run, row in zip(runs, rows, strict=True):
        cells = [f"{row[c]:.2f}" if c in row else "–" for c in present]
        have = [row[c] for c in present if c in row]
        avg = f"{sum(have) / len(have):.2f}" if len(have) == len(present) else "–"
        lines.append(f"| {run['model']} | " + " | ".join(cells) + f" | {avg} |")
    return [*lines, ""]


def merge_runs(runs: Sequence[Run]) -> list[Run]:
    """One run per model: several results files of the same model (one per task, say) become one row."""
    merged: dict[str, Run] = {}
    for run in runs:
        into = merged.setdefault(run["model"], {"model": run["model"], "tasks": {}})
        into["tasks"].update(run["tasks"])  # a task scored twice keeps the later file's scores
    return list(merged.values())


def details(scores: dict[str, Any]) -> str:
    """What the headline leaves out: MRPC's F1, the spread over folds, the chosen C, retrieval's other metrics."""
    extra = ("mrr@10", "map@100", "recall@10", "recall@100")
    parts = [f"{name} {scores[name]:.2f}" for name in extra if name in scores]
    parts += [f"@{dim} dims {value:.2f}" for dim, value in scores.get("dims", {}).items()]
    if "f1" in scores:
        parts.append(f"F1 {scores['f1']:.2f}")
    if "accuracy_std" in scores:
        parts.append(f"± {scores['accuracy_std']:.2f} over folds")
    if "C" in scores:
        parts.append(f"C {scores['C']:g}")
    return ", ".join(parts)


def render(runs: Sequence[Run]) -> str:
    """Markdown: Table 1 and Table 5 layouts (columns present in any run), then every task in full."""
    runs = merge_runs(runs)
    lines = ["# Evaluation results", ""]
    lines += _table("Semantic textual similarity (Spearman x100, paper Table 1)", TABLE1, runs)
    lines += _table("Transfer tasks (accuracy x100, paper Table 5)", TABLE5, runs)
    lines += ["## Every task", "", "| Model | Task | Metric | Score | Details | Examples | Sentences | Seconds |",
              "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for run in runs:
        for spec, s in run["tasks"].items():
            lines.append(f"| {run['model']} | `{spec}` | {s.get('metric', '')} | {s['headline']:.2f} | {details(s)} | "
                         f"{s.get('size', '')} | {s.get('sentences', '')} | {s.get('seconds', '')} |")  # fmt: skip
            for subset, score in s.get("subsets", {}).items():  # STS years: each subset under the pooled score
                lines.append(f"| {run['model']} | `{spec}` / {subset} | spearman | {score:.2f} | | | | |")
            for mode, m in s.get("modes", {}).items():  # retrieval with --sparse-model: each ranking under the task
                lines.append(f"| {run['model']} | `{spec}` / {mode} | ndcg@10 | {m['ndcg@10']:.2f} | "
                             f"mrr@10 {m['mrr@10']:.2f}, recall@100 {m['recall@100']:.2f} | | | |")  # fmt: skip
    return "\n".join(lines) + "\n"
