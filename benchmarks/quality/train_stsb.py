"""One STS benchmark fine-tuning run from all-MiniLM-L6-v2: dev and test Spearman, wall time.

With more than one epoch the dev set picks the best epoch (as `sbert train --dev` does).

    python benchmarks/quality/train_stsb.py --objective regression --seed 0 --epochs 1 --lr 2e-5 [--length-groups 50]
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
from common import STS_DIR
from sbert import SentenceEncoder
from sbert.data import load_dataset
from sbert.evaluation import evaluate_sts
from sbert.training import Objective, Stage, TrainConfig, Trainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--objective", default="regression")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--length-groups", type=int, default=50, help="1 = plain random batches")
    args = parser.parse_args()
    dev_spec = f"stsb:{STS_DIR / 'sts-dev.csv'}"
    stage = Stage(
        (Objective(args.objective, f"stsb:{STS_DIR / 'sts-train.csv'}"),),
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        length_groups=args.length_groups,
        dev=dev_spec if args.epochs > 1 else None,
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "model")
        config = TrainConfig(model="all-MiniLM-L6-v2", output=out, stages=(stage,), seed=args.seed, device="cpu")
        start = time.perf_counter()
        Trainer(config, show_progress=False).run()
        seconds = time.perf_counter() - start
        model = SentenceEncoder.load(out, device="cpu")
        dev = evaluate_sts(model, load_dataset(dev_spec))["spearman"]
        test = evaluate_sts(model, load_dataset(f"stsb:{STS_DIR / 'sts-test.csv'}"))["spearman"]
    print(json.dumps({**vars(args), "seconds": round(seconds, 1), "dev": round(dev, 2), "test": round(test, 2)}))


if __name__ == "__main__":
    main()
