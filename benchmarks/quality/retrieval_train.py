"""Retrieval training from all-MiniLM-L6-v2 on SNLI dev, measured on the SNLI-test retrieval set.

    python benchmarks/quality/retrieval_train.py --seeds 0 1 2 --out retrieval.json     # about 30 min, 2 cores

Collections (built here in a temporary folder, as `sbert data beir-from-nli` builds them): SNLI test
premises with an entailed hypothesis are the queries, every SNLI test hypothesis the corpus, the
entailed ones relevant. Rows, each seed of each run trained for 1 epoch (MNRL, batch 64, lr 2e-5,
no duplicate texts in a batch) on SNLI dev, then scored on nDCG@10 / MRR@10 / Recall@100 and on STS
benchmark test Spearman (retrieval training must not wreck STS):
  zero-shot           the model as it ships
  in-batch            (premise, entailment) pairs, in-batch negatives only
  mined               the same pairs with one hard negative each, mined by the base model from every
                      SNLI dev hypothesis (ranks 0-50, margin 0.05), as `sbert mine-negatives` does
  contradiction       (premise, entailment, contradiction) triplets: the given hard negative
  matryoshka          in-batch, with --matryoshka 384,256,128,64,32 (or the DIM[:WEIGHT] list given
                      as --matryoshka); nDCG@10 at each dimension beside the in-batch model truncated
                      to the same dimensions
Prints one JSON line per finished run, then the tables.
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
from sbert import SentenceEncoder
from sbert.data import Dataset, load_dataset
from sbert.data.beir import read_beir, write_beir
from sbert.data.beir_build import beir_from_nli
from sbert.evaluation import evaluate_sts
from sbert.evaluation.retrieval import evaluate_ir
from sbert.search.negatives import MiningSettings, anchor_positive_pairs, mine_block
from sbert.training import Objective, Stage, TrainConfig, Trainer

SNLI = STS_DIR.parent / "snli"
DIMS = (384, 256, 128, 64, 32)


def training_sets(model: SentenceEncoder) -> dict[str, Dataset]:
    """The three SNLI dev training sets: pairs, pairs with a mined negative, contradiction triplets."""
    dev = load_dataset(f"nli:{SNLI}:dev")
    pairs = anchor_positive_pairs(dev)
    corpus = list(dict.fromkeys(h for _, h in dev.texts))
    vectors = model.encode_document(corpus, show_progress=False)
    mined = mine_block(model, pairs, corpus, vectors, MiningSettings(rank_max=50, margin=0.05))
    return {
        "in-batch": Dataset("snli-dev pairs", "pair", [tuple(p) for p in pairs]),
        "mined": Dataset("snli-dev mined", "triplet", [(a, p, n[0]) for a, p, n in mined]),
        "contradiction": load_dataset(f"nli-triplets:{SNLI}:dev"),
    }


def train(data: Dataset, seed: int, out: Path, matryoshka: str = "", epochs: int = 1, lr: float = 2e-5,
          model: str = "all-MiniLM-L6-v2") -> float:  # fmt: skip
    """MNRL from `model` (batch 64); returns wall seconds."""
    stage = Stage((Objective("mnrl", "bench"),), batch_size=64, lr=lr, epochs=epochs, matryoshka=matryoshka)
    config = TrainConfig(model=model, output=str(out), stages=(stage,), seed=seed, device="cpu")
    start = time.perf_counter()
    Trainer(config, show_progress=False, datasets={"bench": data}).run()
    return time.perf_counter() - start


def scores(model_dir: Path | str, collection: object, dims: tuple[int, ...] = (384,)) -> dict[str, float]:
    """nDCG@10, MRR@10, Recall@100 (and nDCG@10 at each of `dims`) and STSb test Spearman."""
    sts = load_dataset(f"stsb:{STS_DIR / 'sts-test.csv'}")
    out: dict[str, float] = {}
    for dim in dims:
        model = SentenceEncoder.load(model_dir, device="cpu", truncate_dim=dim)
        ir = evaluate_ir(model, collection)  # type: ignore[arg-type]
        out[f"ndcg@10@{dim}"] = ir["ndcg@10"]
        if dim == dims[0]:
            out |= {k: ir[k] for k in ("ndcg@10", "mrr@10", "recall@100")}
            out["stsb"] = evaluate_sts(model, sts)["spearman"]
    return out


def mean(runs: list[dict], key: str) -> str:
    """Mean over seeds, with the spread."""
    values = [r[key] for r in runs]
    spread = f" ± {statistics.stdev(values):.2f}" if len(values) > 1 else ""
    return f"{statistics.mean(values):.2f}{spread}"


def print_tables(results: list[dict]) -> None:
    """Training variants, then the Matryoshka comparison."""
    by_run: dict[str, list[dict]] = {}
    for r in results:
        by_run.setdefault(r["run"], []).append(r)
    print("\n| run | seeds | nDCG@10 | MRR@10 | Recall@100 | STSb test | train s |\n|---|---|---|---|---|---|---|")
    for name, runs in by_run.items():
        print(f"| {name} | {len(runs)} | {mean(runs, 'ndcg@10')} | {mean(runs, 'mrr@10')} | {mean(runs, 'recall@100')} "
              f"| {mean(runs, 'stsb')} | {statistics.mean(r['seconds'] for r in runs):.0f} |")  # fmt: skip
    if "matryoshka" in by_run and "in-batch" in by_run:
        print("\n| dimensions | in-batch, truncated | matryoshka | matryoshka, share of its 384 |\n|---|---|---|---|")
        for dim in DIMS:
            own = statistics.mean(r[f"ndcg@10@{dim}"] / r["ndcg@10@384"] for r in by_run["matryoshka"])
            plain, mat = mean(by_run["in-batch"], f"ndcg@10@{dim}"), mean(by_run["matryoshka"], f"ndcg@10@{dim}")
            print(f"| {dim} | {plain} | {mat} | {100 * own:.1f}% |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--runs", nargs="+", default=["zero-shot", "in-batch", "mined", "contradiction", "matryoshka"])
    parser.add_argument("--out", type=Path, help="every run's scores as JSON")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--matryoshka", default=",".join(map(str, DIMS)), help="the matryoshka run's DIM[:WEIGHT] list")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="the starting model (or a rotated one)")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "snli-test"
        corpus, queries, rows = beir_from_nli(load_dataset(f"nli:{SNLI}:test"))
        write_beir(folder, corpus, queries, {"test": rows})
        collection = read_beir(folder)
        base = SentenceEncoder.load(args.model, device="cpu")
        sets = training_sets(base)
        for name in args.runs:
            for seed in args.seeds if name != "zero-shot" else [0]:
                out = Path(tmp) / f"{name}-{seed}"
                seconds = 0.0 if name == "zero-shot" else train(
                    sets["in-batch" if name == "matryoshka" else name], seed, out,
                    args.matryoshka if name == "matryoshka" else "", args.epochs, args.lr, args.model,
                )  # fmt: skip
                dims = DIMS if name in ("in-batch", "matryoshka", "zero-shot") else (384,)
                row = {"run": name, "seed": seed, "seconds": seconds,
                       **scores(base.source_dir if name == "zero-shot" else out, collection, dims)}  # fmt: skip
                print(json.dumps(row), flush=True)
                results.append(row)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    print_tables(results)


if __name__ == "__main__":
    main()
