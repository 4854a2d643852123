"""Exact top-10 against FAISS HNSW (and IVF) on 1,000,000 x 384 vectors: time and recall@10.

python benchmarks/speed/search_speed.py [--corpus 1000000] [--queries 1000] [--kinds hnsw ivf]

Vectors: the all-MiniLM-L6-v2 embeddings of every distinct sentence in ../shared/data (about
100k, onnx-int8), topped up to `--corpus` rows with draws from a Gaussian that has the real
vectors' mean and covariance (then normalized), since no million distinct real sentences are
available here. Queries: `--queries` real sentences held out of the corpus. Recall@10 is the
share of the exact top-10 ids that the index returns.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import distinct_real_sentences
from sbert import SentenceEncoder
from sbert.search.exact import semantic_search, unit_rows
from sbert.search.index import SearchIndex, build_index


def vectors(total: int, queries: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, int]:
    """(corpus, held-out queries, number of real corpus rows)."""
    sentences = distinct_real_sentences()
    model = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    real = model.encode(sentences, backend="onnx-int8", normalize=True)
    rng = np.random.default_rng(seed)
    real = real[rng.permutation(len(real))]
    held, corpus = real[:queries], real[queries:total]
    extra = total - len(corpus)
    if extra > 0:
        mean, cov = corpus.mean(0), np.cov(corpus, rowvar=False)
        synthetic = rng.multivariate_normal(mean, cov, size=extra, method="cholesky").astype(np.float32)
        corpus = np.concatenate([corpus, unit_rows(synthetic)])
    return np.ascontiguousarray(corpus, dtype=np.float32), held, len(real) - queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--kinds", nargs="+", default=["hnsw", "ivf"])
    args = parser.parse_args()
    corpus, queries, real = vectors(args.corpus, args.queries)
    print(f"corpus {corpus.shape} ({min(real, len(corpus))} real rows), {len(queries)} held-out real queries")
    start = time.perf_counter()
    _, exact = semantic_search(queries, corpus, top_k=10)
    exact_seconds = time.perf_counter() - start
    print(f"exact top-10 (numpy, chunked): {exact_seconds:.2f} s for {len(queries)} queries")
    texts = [""] * len(corpus)
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.kinds:
            start = time.perf_counter()
            build_index(corpus, texts, Path(tmp) / kind, kind, "all-MiniLM-L6-v2", "benchmark")
            built = time.perf_counter() - start
            index = SearchIndex(Path(tmp) / kind)
            start = time.perf_counter()
            _, ids = index.index.search(queries, 10)
            seconds = time.perf_counter() - start
            recall = np.mean([len(set(a.tolist()) & set(b.tolist())) / 10 for a, b in zip(ids, exact, strict=True)])
            print(
                f"{kind:>5}: build {built:6.1f} s, search {seconds:.3f} s, {exact_seconds / seconds:6.1f}x exact, "
                f"recall@10 {recall:.4f}"
            )


if __name__ == "__main__":
    main()
