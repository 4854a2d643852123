"""Paper Tables 1 and 5: frozen sentence embeddings on STS (Spearman) and SentEval transfer (accuracy).

Rows, at this machine's scale: average GloVe, the starting model's averaged tokens and [CLS]
vector (the paper's "Avg. BERT" and "BERT CLS" rows, on MiniLM instead of BERT-base), the
starting model as shipped, and its transformer with a fresh mean-pooling head fine-tuned on SNLI with
the classification objective (the paper's SBERT-NLI recipe; the paper trains BERT-base on 1M SNLI +
MultiNLI pairs).
Columns are whatever test sets are at hand: the STS benchmark and SST-2 in ../shared, plus
SentEval STS 2012-2016 folders, SICK-R and the SentEval transfer folder when given.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sbert.reproduce.paper import STS_COLUMNS, TABLE1, TABLE5, TRANSFER_COLUMNS
from sbert.reproduce.runs import Results, Run, train
from sbert.training.config import Objective, Stage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalSettings:
    """The starting model, the NLI fine-tuning size and the test sets."""

    model: str
    data: Path
    nli_pairs: int = 10_000
    seed: int = 0
    sts: tuple[str, ...] = ()  # extra task specs: sts:DIR, sick:PATH
    transfer: tuple[str, ...] = ()  # extra task specs: transfer:DIR

    def as_dict(self) -> dict[str, object]:
        """The settings a results file must match to be resumed."""
        return {"model": self.model, "data": str(self.data.resolve()), "nli_pairs": self.nli_pairs, "pooling": "mean",
                "seed": self.seed, "sts": list(self.sts), "transfer": list(self.transfer)}  # fmt: skip


@dataclass
class Table:
    """One paper table: its rows (name -> model spec), task specs, paper numbers and columns."""

    title: str
    metric: str
    columns: tuple[str, ...]
    paper: dict[str, tuple[float, ...]]
    tasks: list[str]
    rows: dict[str, str] = field(default_factory=dict)


def nli_model(s: EvalSettings, work: Path) -> Path:
    """The starting model fine-tuned on SNLI (classification, batch 16, one pass), trained once and kept."""
    out = work / f"nli-mean-{s.nli_pairs}-seed{s.seed}"
    if not (out / "modules.json").is_file():
        stage = Stage((Objective("classification", f"nli:{s.data / 'snli'}"),), max_steps=max(1, s.nli_pairs // 16))
        # A fresh mean-pooling head, as the paper's SBERT: all-MiniLM-L6-v2 ends in Normalize, and a
        # softmax head over unit vectors wrecked its STS geometry (STSb 82.03 -> 45.88 after 10,000 pairs).
        seconds = train(Run("sbert-nli", s.model, "mean", (stage,), s.seed, max_seq_length=None), out)
        log.warning("trained %s in %.0f s", out, seconds)
    return out


def build(table: str, s: EvalSettings, nli_dir: Path) -> Table:
    """The rows and tasks of table1 or table5."""
    if table == "table1":
        spec = Table("STS without STS training (paper Table 1)", "Spearman x100", STS_COLUMNS, TABLE1,
                     [f"stsb:{s.data / 'stsbenchmark' / 'sts-test.csv'}", *s.sts])  # fmt: skip
    else:
        spec = Table("SentEval transfer (paper Table 5)", "accuracy x100", TRANSFER_COLUMNS, TABLE5,
                     [f"sst2:{s.data / 'sst2'}", *s.transfer])  # fmt: skip
    spec.rows = {
        "Avg. GloVe embeddings": "glove",
        f"Avg. {s.model} token embeddings": f"avg:{s.model}",
        f"{s.model} CLS-vector": f"cls:{s.model}",
        f"{s.model} as shipped": s.model,
        f"{s.model} + SNLI classification ({s.nli_pairs} pairs)": str(nli_dir),
    }
    return spec


def evaluate_rows(table: Table, results: Results, seed: int) -> None:
    """Score every (row, task) not yet in `results`, loading each row's model once."""
    from sbert.baselines import load_baseline
    from sbert.dense.model import SentenceEncoder
    from sbert.evaluation.tasks import load_tasks, run_task

    tasks = [t for spec in table.tasks for t in load_tasks(spec)]
    for row, spec in table.rows.items():
        todo = [t for t in tasks if not results.has(f"{row}/{t.column}", seed)]
        if not todo:
            continue
        model = load_baseline(spec) or SentenceEncoder.load(spec)
        for task in todo:
            scores = run_task(model, task, seed=seed).scores
            results.put(f"{row}/{task.column}", seed, scores["headline"], scores["seconds"])
            log.warning("%s / %s: %.2f (%.0f s)", row, task.column, scores["headline"], scores["seconds"])


def render(table: Table, results: Results, notes: Sequence[str]) -> str:
    """Our rows, then the paper's rows, over the columns we could score."""
    done = {r["key"]: r["score"] for r in results.data["runs"].values()}
    columns = [c for c in table.columns if any(k.endswith(f"/{c}") for k in done)]
    columns += sorted({k.rsplit("/", 1)[1] for k in done} - set(table.columns) - set(columns))
    lines = [f"# {table.title}", "", *notes, "", f"{table.metric}.", "",
             "| Model | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]  # fmt: skip
    for row in table.rows:
        cells = [f"{done[f'{row}/{c}']:.2f}" if f"{row}/{c}" in done else "–" for c in columns]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    for row, values in table.paper.items():
        paper = dict(zip(table.columns, values, strict=True))
        cells = [f"{paper[c]:.2f}" if c in paper else "" for c in columns]
        lines.append(f"| *paper:* {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
