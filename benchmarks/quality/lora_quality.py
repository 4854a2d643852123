"""What a LoRA adapter costs in quality: LoRA r=16 against full fine-tuning of all-MiniLM-L6-v2 on STSb train.

    python benchmarks/quality/lora_quality.py [--seeds 0 1 2] [--epochs 1] [--lora-lr 2e-4]

Both train the same steps on the same batches (regression on STSb train, batch 16, seed by seed); the
table gives STSb test Spearman (mean and sd over the seeds), trainable parameters, the adapter's size
on disk and the wall time of each run, beside the untrained model's score.
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
from common import STS_DIR
from sbert import SentenceEncoder, train
from sbert.data import load_dataset
from sbert.evaluation import evaluate_sts

TEST = f"stsb:{STS_DIR / 'sts-test.csv'}"


def one_run(seed: int, epochs: int, lr: float, lora: str | None) -> dict[str, float]:
    """Train, reload from disk, score STSb test; the figures of one run."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "model"
        start = time.perf_counter()
        train("all-MiniLM-L6-v2", str(out), {"stsb": f"stsb:{STS_DIR / 'sts-train.csv'}"}, {"stsb": "regression"},
              seed=seed, epochs=epochs, lr=lr, batch_size=16, device="cpu", lora=lora, show_progress=False)  # fmt: skip
        seconds = time.perf_counter() - start
        stage = json.loads((Path(out) / "train_log.jsonl").read_text().splitlines()[0])
        size = sum(p.stat().st_size for p in out.glob("*.safetensors"))
        score = evaluate_sts(SentenceEncoder.load(out, device="cpu"), load_dataset(TEST))["spearman"]
    return {"test": score, "seconds": seconds, "trainable": stage["trainable_parameters"], "mib": size / 2**20}


def main() -> None:
    """Every seed, full then LoRA, and one table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--full-lr", type=float, default=2e-5)
    parser.add_argument("--lora-lr", type=float, default=2e-4, help="adapters want a ~10x higher rate")
    parser.add_argument("--lora", default="r=16,alpha=32")
    args = parser.parse_args()
    base = evaluate_sts(SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu"), load_dataset(TEST))["spearman"]
    runs: dict[str, list[dict[str, float]]] = {"full": [], "lora": []}
    for seed in args.seeds:
        runs["full"].append(one_run(seed, args.epochs, args.full_lr, None))
        runs["lora"].append(one_run(seed, args.epochs, args.lora_lr, args.lora))
        print(json.dumps({"seed": seed, **{k: v[-1] for k, v in runs.items()}}), flush=True)
    print(f"\nuntrained all-MiniLM-L6-v2: STSb test {base:.2f}\n")
    print("| run | lr | STSb test (mean ± sd) | per seed | trainable | weights written | s/run |")
    print("|---|---|---|---|---|---|---|")
    for name, rows in runs.items():
        tests = [r["test"] for r in rows]
        sd = statistics.stdev(tests) if len(tests) > 1 else 0.0
        lr = args.full_lr if name == "full" else args.lora_lr
        label = "full fine-tuning" if name == "full" else f"LoRA {args.lora}"
        print(f"| {label} | {lr:g} | {statistics.mean(tests):.2f} ± {sd:.2f} | {', '.join(f'{t:.2f}' for t in tests)} "
              f"| {rows[0]['trainable']:,} | {rows[0]['mib']:.1f} MiB | "
              f"{statistics.median(r['seconds'] for r in rows):.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
