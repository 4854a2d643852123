"""IS-BERT on this machine, from all-MiniLM-L6-v2 (the paper starts from BERT-base).

(a) Unsupervised: a fresh Transformer -> NGramCNN(1,3,5 x 256) -> mean chain trained with the
    infomax objective on the unlabelled sentences of the STS benchmark train split (1 epoch,
    batch 32, at each --lrs value); STS benchmark test Spearman before and after.
(b) The paper's Table 4 shape: regression on STSb train ("ft") against infomax on the same
    sentences first ("ssl+ft"), the same chain and seeds; mean and std.

    python benchmarks/quality/isbert.py --output runs/isbert [--seeds 0,1,2] [--lrs 1e-6,2e-5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from seed_table import MODEL, infomax, regression, run_cells, table, unlabelled_train_sentences

from common import STS_DIR
from sbert import SentenceEncoder
from sbert.data import load_dataset
from sbert.evaluation import evaluate_sts


def before_scores() -> dict[str, float]:
    """Test Spearman of the shipped model and of the untrained n-gram chain (seed 0)."""
    import torch

    test = load_dataset(f"stsb:{STS_DIR / 'sts-test.csv'}")
    torch.manual_seed(0)
    fresh = SentenceEncoder.from_transformer(MODEL, "ngram-cnn")
    return {
        f"{MODEL} as shipped (mean pooling)": evaluate_sts(SentenceEncoder.load(MODEL), test)["spearman"],
        "untrained NGramCNN head (seed 0)": evaluate_sts(fresh, test)["spearman"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", type=Path, default=Path("runs/isbert"))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--lrs", default="1e-6,2e-5", help="infomax learning rates for (a)")
    parser.add_argument("--ssl-lr", type=float, default=1e-6, help="infomax learning rate in (b)")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    (args.output / "work").mkdir(parents=True, exist_ok=True)
    text = unlabelled_train_sentences(args.output / "work")
    cells = {f"(a) infomax lr {lr}": ("ngram-cnn", (infomax(text, float(lr)),)) for lr in args.lrs.split(",")}
    cells["(b) ft"] = ("ngram-cnn", (regression(),))
    cells["(b) ssl+ft"] = ("ngram-cnn", (infomax(text, args.ssl_lr), regression()))
    before = before_scores()
    results = run_cells({k: v for k, v in cells.items() if k.startswith("(a)")}, seeds[:1], args.output / "a")
    print("(a) STS benchmark test Spearman, before and after infomax (seed 0)\n")
    for name, score in before.items():
        print(f"- before: {name}: {score:.2f}")
    print(table(results, [k for k in cells if k.startswith("(a)")]))
    results = run_cells({k: v for k, v in cells.items() if k.startswith("(b)")}, seeds, args.output / "b")
    print(f"\n(b) ft vs ssl+ft (infomax lr {args.ssl_lr}), seeds {args.seeds}\n")
    print(table(results, ["(b) ft", "(b) ssl+ft"]))


if __name__ == "__main__":
    main()
