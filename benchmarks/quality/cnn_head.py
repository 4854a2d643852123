"""CNN-SBERT's head against mean pooling (Choi et al. 2020, Table I shape), from all-MiniLM-L6-v2.

Regression on the STS benchmark train split (batch 16), a fresh head on the transformer, several
seeds; STS benchmark test Spearman. The head's five convolutions over a (B, 128, T, 384) map cost
about 2.5x the MiniLM forward on CPU (measured 2.4 s per 16-sentence column, forward+backward), so
each run trains on a seeded random subsample of --pairs pairs (0 = the whole split). Mean
pooling trains at SBERT's lr 2e-5; the CNN head at that paper's 1e-5 (add 2e-5 with --cnn-lrs 1e-5,2e-5).

    python benchmarks/quality/cnn_head.py --output runs/cnn [--seeds 0,1,2] [--cnn-lrs 1e-5] [--pairs 1200]
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from seed_table import regression, run_cells, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", type=Path, default=Path("runs/cnn"))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--cnn-lrs", default="1e-5")
    parser.add_argument("--pairs", type=int, default=1200, help="training pairs per run (0: all 5,749)")
    args = parser.parse_args()
    steps = args.pairs // 16
    cells = {"mean pooling, lr 2e-5": ("mean", (replace(regression(2e-5), max_steps=steps),))}
    for lr in args.cnn_lrs.split(","):
        cells[f"CNN head, lr {lr}"] = ("cnn", (replace(regression(float(lr)), max_steps=steps),))
    results = run_cells(cells, [int(s) for s in args.seeds.split(",")], args.output)
    print(table(results, list(cells)))


if __name__ == "__main__":
    main()
