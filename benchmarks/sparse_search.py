"""Sparse search speed: sbert's inverted index against scipy's brute-force CSR product, in the same run.

    python benchmarks/sparse_search.py [--docs 1000000] [--queries 640] [--vocab 30522]

Synthetic SPLADE-like vectors: about 120 active dimensions per document and 30 per query. Terms are
drawn from a Zipf-like law (rank^-0.8 over the vocabulary, as real term frequencies fall off), and
weights are exponential. Both searches get the same 64-query blocks and return each query's top
10. Recall@10 compares the index's top 10 with brute force's (both are exact, so this is a check).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse

from sbert.search.sparse_index import SparseIndex, sparse_search


def synthetic(rows: int, active: int, vocab: int, seed: int) -> scipy.sparse.csr_matrix:
    """`rows` sparse vectors of about `active` Zipf-drawn terms each (repeats within a row merge)."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab + 1) ** 0.8
    terms = rng.permutation(vocab)  # frequent terms spread over the vocabulary, not the first ids
    cols = terms[np.searchsorted(np.cumsum(p / p.sum()), rng.random(rows * active))].astype(np.int32)
    data = rng.exponential(1.0, rows * active).astype(np.float32)
    matrix = scipy.sparse.csr_matrix((data, cols, np.arange(0, rows * active + 1, active)), shape=(rows, vocab))
    matrix.sum_duplicates()
    return matrix


def timed(search: object, queries: scipy.sparse.csr_matrix, block: int) -> tuple[float, np.ndarray]:
    """Seconds for all queries, block by block, and the top-10 ids."""
    start = time.perf_counter()
    ids = np.concatenate([search(queries[s : s + block])[1] for s in range(0, queries.shape[0], block)])  # type: ignore[operator]
    return time.perf_counter() - start, ids


def main() -> None:
    """Build the data and the index, time both searches, print one table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=640)
    parser.add_argument("--vocab", type=int, default=30522)
    parser.add_argument("--block", type=int, default=64)
    args = parser.parse_args()
    docs = synthetic(args.docs, 120, args.vocab, 0)
    queries = synthetic(args.queries, 30, args.vocab, 1)
    start = time.perf_counter()
    index = SparseIndex.build(docs)
    built = time.perf_counter() - start
    brute_s, brute = timed(lambda q: sparse_search(q, docs, 10), queries, args.block)
    index_s, found = timed(lambda q: index.search(q, 10), queries, args.block)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found.tolist(), brute.tolist(), strict=True)])
    active = np.diff(docs.indptr).mean(), np.diff(queries.indptr).mean()
    print(f"{args.docs:,} documents ({active[0]:.1f} active dims), {args.queries} queries ({active[1]:.1f}), "
          f"vocabulary {args.vocab:,}; index built in {built:.1f} s\n")  # fmt: skip
    print("| search | queries/s | recall@10 vs brute force |")
    print("|---|---|---|")
    print(f"| scipy CSR brute force (documents x queries) | {args.queries / brute_s:.1f} | 1.000 |")
    print(f"| sbert SparseIndex (inverted) | {args.queries / index_s:.1f} | {recall:.3f} |")
    print(f"\nindex / brute force: {brute_s / index_s:.1f}x")


if __name__ == "__main__":
    main()
