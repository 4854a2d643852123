"""Truncated vectors with and without `sbert rotate`: SNLI-retrieval nDCG@10 and STSb Spearman at each width.

The rotation is fitted on the distinct SNLI dev sentences (or STSb train's: never a test split the
scores come from); both models are then scored on the SNLI-test retrieval set (3,089 queries, 9,639 documents)
and on STSb test, with every vector cut to its first k dimensions and renormalised.

    python benchmarks/quality/matryoshka_rotation.py [--model all-MiniLM-L6-v2] [--fit snli-dev | stsb-train]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import STS_DIR, ir_set
from sbert import SentenceEncoder
from sbert.data import load_dataset
from sbert.evaluation.retrieval import ir_metrics
from sbert.search import semantic_search
from sbert.training.rotation import rotate

DIMS = (384, 256, 128, 64, 32)


def unit(x: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1."""
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def scores(model: SentenceEncoder, dims: tuple[int, ...]) -> dict[int, tuple[float, float]]:
    """(nDCG@10 on SNLI-test retrieval, STSb test Spearman) at each width."""
    ir = ir_set("snli")
    qrels = [ir.qrels[q] for q in ir.query_ids]
    queries, corpus = model.encode(ir.queries, batch_size=128), model.encode(ir.corpus, batch_size=128)
    sts = load_dataset(f"stsb:{STS_DIR / 'sts-test.csv'}")
    a, b = model.encode(sts.column(0), batch_size=128), model.encode(sts.column(1), batch_size=128)
    out = {}
    for k in dims:
        _, rows = semantic_search(unit(queries[:, :k]), unit(corpus[:, :k]), 10)
        ndcg = ir_metrics([[ir.corpus_ids[i] for i in row] for row in rows], qrels)["ndcg@10"]
        cosine = (unit(a[:, :k]) * unit(b[:, :k])).sum(axis=1)
        out[k] = (ndcg, 100 * float(spearmanr(cosine, sts.labels).statistic))
    return out


def main() -> None:
    """Fit the rotation, score both models at every width, print one table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--fit", choices=("snli-dev", "stsb-train"), default="snli-dev", help="the texts fitted on")
    args = parser.parse_args()
    model = SentenceEncoder.load(args.model, device="cpu")
    spec = f"nli:{STS_DIR.parent / 'snli'}:dev" if args.fit == "snli-dev" else f"stsb:{STS_DIR / 'sts-train.csv'}"
    texts = list(dict.fromkeys(t for example in load_dataset(spec).texts for t in example))
    start = time.perf_counter()
    rotated, report = rotate(model, texts, batch_size=128)
    fitted = time.perf_counter() - start
    dims = tuple(k for k in DIMS if k <= model.embedding_dimension)
    plain, turned = scores(model, dims), scores(rotated, dims)
    print(f"{args.model}: fitted on {report.texts} {args.fit} sentences in {fitted:.0f} s (encoding included)\n")
    print("| dims | nDCG@10 truncated | nDCG@10 rotated | share of full, rotated | STSb truncated | STSb rotated |")
    print("|---|---|---|---|---|---|")
    full = turned[dims[0]][0]
    for k in dims:
        print(f"| {k} | {plain[k][0]:.2f} | {turned[k][0]:.2f} | {100 * turned[k][0] / full:.1f}% | "
              f"{plain[k][1]:.2f} | {turned[k][1]:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
