"""Classification on SNLI and triplet training on SNLI-derived triplets, from all-MiniLM-L6-v2.

Trains on SNLI dev (9,842 pairs / its triplets), scores on SNLI test (held out): NLI accuracy with the
trained head, triplet accuracy, and STS benchmark test Spearman before and after each run. The
multiple-negatives ranking loss (mnrl) on the same triplets is run for contrast.

    python benchmarks/quality/nli_triplet.py [--output results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import ROOT, STS_DIR
from sbert import SentenceEncoder
from sbert.data import load_dataset
from sbert.evaluation import evaluate_nli, evaluate_sts, evaluate_triplets
from sbert.training import Objective, Stage, TrainConfig, Trainer

SNLI = ROOT.parent / "shared" / "data" / "snli"
BASE = "all-MiniLM-L6-v2"


def train(objective: str, spec: str, out: str) -> float:
    stage = Stage((Objective(objective, spec),), epochs=1, batch_size=16, lr=2e-5)
    start = time.perf_counter()
    Trainer(TrainConfig(model=BASE, output=out, stages=(stage,), seed=0, device="cpu"), show_progress=False).run()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--objectives", default="classification,triplet,mnrl", help="comma-separated")
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    sts_test = load_dataset(f"stsb:{STS_DIR / 'sts-test.csv'}")
    nli_test = load_dataset(f"nli:{SNLI}:test")
    triplet_test = load_dataset(f"nli-triplets:{SNLI}:test")
    base = SentenceEncoder.load(BASE, device="cpu")
    results: dict[str, dict[str, float]] = {
        "before": {
            "sts_test_spearman": evaluate_sts(base, sts_test)["spearman"],
            "triplet_accuracy": evaluate_triplets(base, triplet_test)["accuracy"],
        }
    }
    runs = {
        "classification": f"nli:{SNLI}:dev",
        "triplet": f"nli-triplets:{SNLI}:dev",
        "mnrl": f"nli-triplets:{SNLI}:dev",
    }
    for objective in args.objectives.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / objective
            seconds = train(objective, runs[objective], str(out))
            model = SentenceEncoder.load(out, device="cpu")
            results[objective] = {
                "seconds": seconds,
                "triplet_accuracy": evaluate_triplets(model, triplet_test)["accuracy"],
                "sts_test_spearman": evaluate_sts(model, sts_test)["spearman"],
            }
            if objective == "classification":
                results[objective]["nli_test_accuracy"] = evaluate_nli(model, out, nli_test)["accuracy"]
    print(json.dumps(results, indent=2))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
