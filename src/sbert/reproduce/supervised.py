"""Paper Table 2: supervised STS benchmark training, bi-encoder against cross-encoder, over seeds.

Rows: the starting model trained with the regression objective on STSb train (SBERT-STSb); trained
first on SNLI with the classification objective, then on STSb (SBERT-NLI-STSb); and the same
transformer as a cross-encoder trained on STSb (the paper's BERT-STSb row). Every cell is STS
benchmark test Spearman x100, mean ± std over seeds. One pass over the first `sts_pairs` of each
seeded epoch (the paper: 4 epochs over all 5,749 pairs, 10 seeds, BERT-base).
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sbert.reproduce.paper import TABLE2
from sbert.reproduce.runs import Results, Run, train
from sbert.training.config import Objective, Stage

if TYPE_CHECKING:
    from sbert.data import Dataset

log = logging.getLogger(__name__)
BATCH = 16
ROWS = ("SBERT-STSb", "SBERT-NLI-STSb", "cross-encoder STSb")


@dataclass(frozen=True)
class SupervisedSettings:
    """Starting model, data sizes and seeds."""

    model: str
    data: Path
    seeds: tuple[int, ...] = (0, 1, 2)
    nli_pairs: int = 2000
    sts_pairs: int = 5749

    def as_dict(self) -> dict[str, object]:
        """The settings a results file must match to be resumed."""
        return {"model": self.model, "data": str(self.data.resolve()), "seeds": list(self.seeds), "pooling": "mean",
                "nli_pairs": self.nli_pairs, "sts_pairs": self.sts_pairs}  # fmt: skip


def _stages(s: SupervisedSettings, with_nli: bool) -> tuple[Stage, ...]:
    sts = Stage((Objective("regression", f"stsb:{s.data / 'stsbenchmark' / 'sts-train.csv'}"),),
                batch_size=BATCH, max_steps=max(1, s.sts_pairs // BATCH))  # fmt: skip
    if not with_nli:
        return (sts,)
    nli = Stage((Objective("classification", f"nli:{s.data / 'snli'}"),), batch_size=BATCH,
                max_steps=max(1, s.nli_pairs // BATCH))  # fmt: skip
    return nli, sts


def run_table2(s: SupervisedSettings, results: Results, work: Path) -> None:
    """Every (row, seed) not yet in `results`."""
    from sbert.data import load_dataset
    from sbert.dense.model import SentenceEncoder
    from sbert.evaluation import evaluate_sts

    test = load_dataset(f"stsb:{s.data / 'stsbenchmark' / 'sts-test.csv'}")
    for seed in s.seeds:
        for row in ROWS:
            if results.has(row, seed):
                continue
            if row == "cross-encoder STSb":
                score, seconds = _cross_encoder(s, seed, test)
            else:
                out = work / f"{row}-seed{seed}"
                # A fresh mean-pooling head on the transformer, as the paper's SBERT (see unsupervised.nli_model).
                run = Run(row, s.model, "mean", _stages(s, row == "SBERT-NLI-STSb"), seed, max_seq_length=None)
                seconds = train(run, out)  # the model's own length limit: STSb and SNLI sentences fit in it
                score = evaluate_sts(SentenceEncoder.load(out), test, show_progress=False)["spearman"]
                shutil.rmtree(out)
            results.put(row, seed, score, seconds)
            log.warning("%s seed %d: %.2f (%.0f s)", row, seed, score, seconds)


def _cross_encoder(s: SupervisedSettings, seed: int, test: Dataset) -> tuple[float, float]:
    import numpy as np

    from sbert.data import load_dataset
    from sbert.evaluation.sts import cross_scores
    from sbert.reranker.model import CrossEncoder
    from sbert.training.cross_encoder import CrossFitSettings, fit_cross_encoder

    train_set = load_dataset(f"stsb:{s.data / 'stsbenchmark' / 'sts-train.csv'}")
    rows = np.random.default_rng(seed).permutation(len(train_set))[: s.sts_pairs]  # the same share as the bi-encoder
    model = CrossEncoder.new(s.model)
    started = time.monotonic()
    sample = train_set.subset(sorted(rows.tolist()), "stsb-train-sample")
    fit_cross_encoder(model, sample, CrossFitSettings(batch_size=BATCH, seed=seed))
    seconds = time.monotonic() - started
    return cross_scores(model, test)[0]["spearman"], seconds


def render(results: Results, s: SupervisedSettings) -> str:
    """Ours beside the paper's, mean ± std over seeds."""
    lines = [
        "# Supervised STS benchmark training (paper Table 2)",
        "",
        f"Starting model `{s.model}` (the paper: BERT-base). One pass over {s.sts_pairs} STSb train pairs, "
        f"batch {BATCH}, lr 2e-5; the NLI stage first sees {s.nli_pairs} SNLI pairs (the paper: 1M SNLI + MultiNLI "
        f"pairs, then 4 epochs of STSb). Seeds {', '.join(map(str, s.seeds))}; STSb test Spearman x100.",
        "",
        "| Model | Ours | Paper (BERT-base) |",
        "|---|---|---|",
    ]
    paper_rows = {"SBERT-STSb": "SBERT-STSb-base", "SBERT-NLI-STSb": "SBERT-NLI-STSb-base",
                  "cross-encoder STSb": "BERT-STSb-base (cross-encoder)"}  # fmt: skip
    for row in ROWS:
        mean, std, n = results.summary(row)
        paper_mean, paper_std = TABLE2[paper_rows[row]]
        ours = f"{mean:.2f} ± {std:.2f} (n={n})" if n else "not run"
        lines.append(f"| {row} | {ours} | {paper_mean:.2f} ± {paper_std:.2f} |")
    mean, std = TABLE2["BERT-NLI-STSb-base (cross-encoder)"]
    lines.append(f"| *paper only:* BERT-NLI-STSb-base (cross-encoder) | | {mean:.2f} ± {std:.2f} |")
    return "\n".join(lines) + "\n"
