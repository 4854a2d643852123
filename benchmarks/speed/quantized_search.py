"""Float against int8 + rescoring and binary + rescoring indexes: memory per vector, query latency, quality.

    python benchmarks/speed/quantized_search.py [--million 1000000] [--latency-queries 200]

Two corpora, all-MiniLM-L6-v2 vectors (384 dims), 2 CPU cores, one run:
- the SNLI-test retrieval set (`sbert data beir-from-nli`: 3,089 queries, 9,639 documents):
  nDCG@10 of each index's top 10 against the qrels;
- one million vectors: those 9,639 real documents topped up with Gaussian draws shaped like them
  (benchmarks/speed/retrieval_speed.py's generator; no million real sentences exist here): recall@10
  against exact float search, and nDCG@10 of the first --big-queries real queries (only real
  documents are relevant).
Kinds: `flat` (float32, exact: the reference), `int8` (FAISS scalar quantizer, our calibration
ranges) and `binary` (FAISS binary flat, Hamming), both rescoring their top `rescore x 10`
candidates with the float vectors memory-mapped from disk (`sbert.search.index`).
Memory: bytes per vector of the index held in memory (FAISS's serialized size / rows); the
rescoring vectors stay on disk and only the candidates' rows are read. Latency: median of
single-query searches (`SearchIndex.search`, texts included), queries in the same order for
every kind. Prints one JSON line per kind and corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from retrieval_speed import synthetic

from common import ir_set
from sbert import SentenceEncoder
from sbert.evaluation.retrieval import ir_metrics
from sbert.search.index import SearchIndex, build_index
from sbert.search.quantized_index import index_bytes

KINDS = ("flat", "int8", "binary")


def measure(index: SearchIndex, queries: np.ndarray, latency_queries: int, rescore: int | None) -> tuple[list, float]:
    """All queries' top 10 (one batched call) and the median single-query latency in ms."""
    hits = index.search(queries, 10, rescore=rescore)
    times = []
    for q in queries[:latency_queries]:
        start = time.perf_counter()
        index.search(q[None, :], 10, rescore=rescore)
        times.append(time.perf_counter() - start)
    return hits, 1000 * float(np.median(times))


def run_corpus(name: str, vectors: np.ndarray, doc_ids: list[str], queries: np.ndarray,
               qrels: list[dict[str, int]], work: Path, args: argparse.Namespace) -> None:  # fmt: skip
    """Build each kind over `vectors`, search, print its line; flat is the reference."""
    texts = [f"doc {i}" for i in range(len(vectors))]
    exact: list[set[int]] = []
    reference = {}
    for kind in KINDS:
        start = time.perf_counter()
        build_index(vectors, texts, work / kind, kind, "all-MiniLM-L6-v2", "bench")
        built = time.perf_counter() - start
        index = SearchIndex(work / kind)
        for rescore in args.rescore if kind != "flat" else (None,):
            hits, latency = measure(index, queries, args.latency_queries, rescore)
            if kind == "flat":
                exact = [{h.id for h in row} for row in hits]
            recall = np.mean([len({h.id for h in row} & e) / 10 for row, e in zip(hits, exact, strict=True)])
            ndcg = ir_metrics([[doc_ids[h.id] for h in row] for row in hits], qrels)["ndcg@10"]
            line = {"corpus": name, "kind": kind, "rescore": rescore, "vectors": len(vectors),
                    "bytes_per_vector": round(index_bytes(index.index) / len(vectors), 1),
                    "median_query_ms": round(latency, 2), "ndcg@10": round(ndcg, 2),
                    "recall@10_vs_exact": round(100 * float(recall), 2), "build_s": round(built, 1)}  # fmt: skip
            if kind == "flat":
                reference = line
            else:
                line |= {"ndcg_vs_float_pct": round(100 * ndcg / reference["ndcg@10"], 2),
                         "memory_ratio": round(reference["bytes_per_vector"] / line["bytes_per_vector"], 1),
                         "speedup_vs_float": round(reference["median_query_ms"] / latency, 2)}  # fmt: skip
            print(json.dumps(line), flush=True)
        del index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--million", type=int, default=1_000_000, help="rows of the large corpus (0: skip it)")
    parser.add_argument("--latency-queries", type=int, default=200)
    parser.add_argument("--big-queries", type=int, default=500, help="queries scored on the large corpus")
    parser.add_argument("--rescore", type=int, nargs="+", default=[4, 10, 25], help="rescore multiples to measure")
    args = parser.parse_args()
    data = ir_set("snli")
    doc_ids, qrels = data.corpus_ids, [data.qrels[q] for q in data.query_ids]
    model = SentenceEncoder.load(device="cpu")
    q_vec, real = model.encode(data.queries), model.encode(data.corpus)
    with tempfile.TemporaryDirectory(prefix="sbert-quantized-") as tmp:
        run_corpus("snli-test", real, doc_ids, q_vec, qrels, Path(tmp) / "snli", args)
    if args.million:
        big = np.concatenate(list(synthetic(real, args.million)))
        ids = doc_ids + [f"synthetic{i}" for i in range(args.million - len(doc_ids))]
        with tempfile.TemporaryDirectory(prefix="sbert-quantized-") as tmp:
            n = args.big_queries
            run_corpus(f"{args.million:,} vectors", big, ids, q_vec[:n], qrels[:n], Path(tmp) / "big", args)


if __name__ == "__main__":
    main()
