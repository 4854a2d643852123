"""Several sets in one run against the same sets one after the other: does mixing help.

    python benchmarks/quality/multi_set.py --seeds 0 1 2 --out multi_set.json

From all-MiniLM-L6-v2, 1 epoch of each set (batches of --batch-size, never mixing sets): SNLI dev
(premise, entailment) pairs with MNRL and STS benchmark train with CoSENT. Runs:
  mixed-round-robin     one stage, both objectives, batches in turns (`sbert.train`)
  mixed-proportional    the same with `sampling="proportional"`
  sequential            stage 1 SNLI pairs with MNRL, stage 2 STSb with CoSENT (the paper's order)
Each scored on STSb test Spearman and on the SNLI-test retrieval set (nDCG@10), as
benchmarks/quality/retrieval_train.py builds it. Prints one JSON line per run, then a table (mean ± sd).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import STS_DIR, ir_set
from sbert import SentenceEncoder
from sbert.data import Dataset, load_dataset
from sbert.evaluation import evaluate_sts
from sbert.evaluation.retrieval import evaluate_ir
from sbert.search.negatives import anchor_positive_pairs
from sbert.training import Objective, Stage, TrainConfig, Trainer, train

SNLI = STS_DIR.parent / "snli"
RUNS = ("mixed-round-robin", "mixed-proportional", "sequential")


def run(name: str, sets: dict[str, Dataset], seed: int, out: Path, args: argparse.Namespace) -> float:
    """Train one variant; returns wall seconds."""
    start = time.perf_counter()
    common = {"batch_size": args.batch_size, "max_steps": args.max_steps, "seed": seed, "device": "cpu"}
    if name.startswith("mixed"):
        sampling = name.removeprefix("mixed-")
        train("all-MiniLM-L6-v2", str(out), datasets=sets, objectives={"snli": "mnrl", "stsb": "cosent"},
              sampling=sampling, show_progress=False, **common)  # fmt: skip
    else:
        stages = tuple(
            Stage((Objective(loss, key),), batch_size=args.batch_size, max_steps=args.max_steps)
            for key, loss in (("snli", "mnrl"), ("stsb", "cosent"))
        )
        config = TrainConfig(model="all-MiniLM-L6-v2", output=str(out), stages=stages, seed=seed, device="cpu")
        Trainer(config, show_progress=False, datasets=sets).run()
    return time.perf_counter() - start


def scores(model_dir: Path, collection: object, sts: Dataset) -> dict[str, float]:
    """STSb test Spearman and SNLI-retrieval nDCG@10."""
    model = SentenceEncoder.load(model_dir, device="cpu")
    ir = evaluate_ir(model, collection)  # type: ignore[arg-type]
    return {"stsb": evaluate_sts(model, sts)["spearman"], "ndcg@10": ir["ndcg@10"]}


def summary(results: list[dict]) -> None:
    """One row per variant, mean ± sd over seeds."""
    print("\n| run | seeds | STSb test | SNLI nDCG@10 | train s |\n|---|---|---|---|---|")
    for name in dict.fromkeys(r["run"] for r in results):
        rows = [r for r in results if r["run"] == name]
        cells = []
        for key in ("stsb", "ndcg@10"):
            values = [r[key] for r in rows]
            sd = f" ± {statistics.stdev(values):.2f}" if len(values) > 1 else ""
            cells.append(f"{statistics.mean(values):.2f}{sd}")
        print(f"| {name} | {len(rows)} | {cells[0]} | {cells[1]} | {statistics.mean(r['seconds'] for r in rows):.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--runs", nargs="+", default=list(RUNS), choices=RUNS)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-steps", type=int, default=0, help="cap each stage (0: one full epoch)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    sts_test = load_dataset(f"stsb:{STS_DIR / 'sts-test.csv'}")
    nli_dev = load_dataset(f"nli:{SNLI}:dev")
    sets = {
        "snli": Dataset("snli-dev pairs", "pair", [tuple(p) for p in anchor_positive_pairs(nli_dev)]),
        "stsb": load_dataset(f"stsb:{STS_DIR / 'sts-train.csv'}"),
    }  # fmt: skip
    results = []
    collection = ir_set("snli")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.runs:
            for seed in args.seeds:
                out = Path(tmp) / f"{name}-{seed}"
                seconds = run(name, sets, seed, out, args)
                row = {"run": name, "seed": seed, "seconds": round(seconds, 1), **scores(out, collection, sts_test)}
                print(json.dumps(row), flush=True)
                results.append(row)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    summary(results)


if __name__ == "__main__":
    main()
