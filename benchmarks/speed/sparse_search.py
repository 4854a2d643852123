"""Sparse search speed: sbert's inverted index against scipy's brute-force CSR product, in the same run.

    python benchmarks/speed/sparse_search.py [--docs 1000000] [--queries 640] [--vocab 30522]
        [--seismic 10:0.7 20:0.9 --n-postings 4000 --threads 1]

Synthetic SPLADE-like vectors: about 120 active dimensions per document and 30 per query. Terms are
drawn from a Zipf-like law (rank^-0.8 over the vocabulary, as real term frequencies fall off), and
weights are exponential. Both searches get the same 64-query blocks and return each query's top
10. Recall@10 compares the index's top 10 with brute force's (both are exact, so this is a check).
With --seismic, Seismic's approximate index (pyseismic-lsr) is built on the same documents and
searched at each QUERY_CUT:HEAP_FACTOR; its recall@10 is against the exact top 10.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse

from sbert.search.seismic_index import SeismicSettings, SeismicSparseIndex
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
    parser.add_argument("--seismic", nargs="*", default=[], metavar="QUERY_CUT:HEAP_FACTOR")
    parser.add_argument("--n-postings", type=int, default=SeismicSettings.n_postings)
    parser.add_argument("--threads", type=int, default=1, help="Seismic's search and build threads (0: all)")
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
    for line in seismic_rows(docs, queries, found, args):
        print(line)
    print(f"\nindex / brute force: {brute_s / index_s:.1f}x")


def seismic_rows(docs: scipy.sparse.csr_matrix, queries: scipy.sparse.csr_matrix, exact: np.ndarray,
                 args: argparse.Namespace) -> list[str]:  # fmt: skip
    """One table row per Seismic search setting: queries/s and recall@10 against the exact top 10."""
    if not args.seismic:
        return []
    start = time.perf_counter()
    index = SeismicSparseIndex.build(docs, SeismicSettings(n_postings=args.n_postings, threads=args.threads))
    rows = [f"| (Seismic index built in {time.perf_counter() - start:.1f} s, n_postings {args.n_postings}, "
            f"{args.threads or 'all'} thread(s)) | | |"]  # fmt: skip
    for setting in args.seismic:
        cut, heap = setting.split(":")
        index.settings = SeismicSettings(args.n_postings, query_cut=int(cut), heap_factor=float(heap),
                                         threads=args.threads)  # fmt: skip
        seconds, found = timed(lambda q: index.search(q, 10), queries, args.block)
        recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found.tolist(), exact.tolist(), strict=True)])
        rows.append(f"| Seismic, query_cut {cut}, heap_factor {heap} | {args.queries / seconds:.1f} | {recall:.3f} |")
    return rows


if __name__ == "__main__":
    main()
