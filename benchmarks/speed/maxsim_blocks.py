"""Exact MaxSim, one query at a time, by the document block it decodes: the claim behind DOC_BLOCK_TOKENS.

    python benchmarks/speed/maxsim_blocks.py [--documents 20000] [--queries 20] [--rounds 3] [--blocks 1000000000,4096]

The corpus is multivector_search.py's synthetic one (128-d unit tokens, 20-60 a document). For each
storage (float16, int8) and each cap on the document tokens decoded at a time (1e9: no cap, the
32M-float budget alone decides), rounds alternate and queries/s is the median over the queries,
then over the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # multivector_search.py's corpus
from multivector_search import corpus

import sbert.vectors.maxsim as maxsim


def main() -> None:
    """Alternate the caps, print queries/s per storage and cap."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--blocks", default="1000000000,4096", help="comma-separated caps on decoded tokens")
    args = parser.parse_args()
    docs, queries = corpus(args.documents, args.queries)
    stores = {fmt: docs.compact(fmt) for fmt in ("float16", "int8")}
    caps = [int(c) for c in args.blocks.split(",")]
    rates: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.rounds):
        for cap in caps:
            maxsim.DOC_BLOCK_TOKENS = cap
            for fmt, store in stores.items():
                per_query = []
                for q in range(len(queries)):
                    one = queries.subset(np.array([q]))
                    start = time.perf_counter()
                    maxsim.maxsim_matrix(one, store)
                    per_query.append(1.0 / (time.perf_counter() - start))
                rates.setdefault((fmt, cap), []).append(statistics.median(per_query))
    print(f"{len(docs.tokens)} document tokens, {len(queries)} queries, {args.rounds} rounds")
    print("| storage | decoded tokens at a time | queries/s (median) | rounds |\n|---|---|---|---|")
    for (fmt, cap), values in rates.items():
        print(f"| {fmt} | {cap} | {statistics.median(values):.2f} | {', '.join(f'{v:.2f}' for v in values)} |")


if __name__ == "__main__":
    main()
