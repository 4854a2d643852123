"""Retrieval quality of dense, CSR-sparse and BM25 vectors and their hybrids, side by side, on SNLI-test retrieval.

    python benchmarks/quality/sparse_quality.py [--k 32] [--hidden 1536] [--epochs 20]

- Dense: all-MiniLM-L6-v2, exact cosine top 100.
- CSR: a top-k sparse autoencoder trained here on MiniLM's frozen vectors. Its data are the SNLI dev
  sentences (reconstruction) and SNLI dev entailment pairs (contrastive), so nothing of the test
  split. It is searched with sbert's exact SparseIndex.
- BM25: bm25s (Lucene scoring, English stopwords) over the corpus text.
- Hybrids: reciprocal-rank fusion and a 0.5/0.5 weighted sum of min-max normalised scores, fused
  over each ranking's top 100.
Metric: nDCG@10 x 100 on the SNLI-test collection that `sbert data beir-from-nli` builds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import STS_DIR, ir_set
from sbert import SentenceEncoder
from sbert.data import load_dataset
from sbert.evaluation.retrieval import ir_metrics
from sbert.search import semantic_search
from sbert.search.hybrid import hybrid_fuse
from sbert.search.sparse_index import SparseIndex
from sbert.sparse.csr_train import CsrSettings, train_csr

Ranking = tuple[np.ndarray, np.ndarray]


def bm25_ranking(corpus: list[str], queries: list[str], top: int) -> Ranking:
    """BM25 scores and corpus rows of each query's `top` documents."""
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
    rows, scores = retriever.retrieve(bm25s.tokenize(queries, stopwords="en", show_progress=False), k=top,
                                      show_progress=False)  # fmt: skip
    return scores.astype(np.float32), rows.astype(np.int64)


def csr_data() -> tuple[list[str], list[tuple[str, str]]]:
    """SNLI dev: every distinct sentence, and the entailment pairs."""
    dev = load_dataset(f"nli:{STS_DIR.parent / 'snli'}:dev")
    assert dev.labels is not None and dev.label_names is not None
    entail = dev.label_names.index("entailment")
    pairs = [(a, b) for (a, b), y in zip(dev.texts, dev.labels, strict=True) if int(y) == entail]
    return list(dict.fromkeys(t for pair in dev.texts for t in pair)), pairs


def main() -> None:
    """Train CSR, rank with each method, print one table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=1536)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--top", type=int, default=100, help="depth of each ranking before fusion")
    args = parser.parse_args()
    ir = ir_set("snli")
    dense = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    texts, pairs = csr_data()
    start = time.perf_counter()
    csr = train_csr(dense, texts, pairs, CsrSettings(hidden_dim=args.hidden, k=args.k, epochs=args.epochs))
    trained = time.perf_counter() - start
    corpus_dense, query_dense = dense.encode(ir.corpus), dense.encode(ir.queries)
    rankings: dict[str, Callable[[], Ranking]] = {
        "dense (all-MiniLM-L6-v2)": lambda: semantic_search(query_dense, corpus_dense, args.top),
        f"CSR sparse (k={args.k} of {args.hidden})": lambda: SparseIndex.build(csr.encode(ir.corpus)).search(
            csr.encode(ir.queries), args.top),
        "BM25 (bm25s)": lambda: bm25_ranking(ir.corpus, ir.queries, args.top),
    }  # fmt: skip
    ranked = {name: make() for name, make in rankings.items()}
    dense_r, csr_r, bm25_r = ranked.values()
    for method in ("rrf", "weighted"):
        ranked[f"dense + BM25, {method}"] = hybrid_fuse(dense_r, bm25_r, 10, method)
        ranked[f"dense + CSR, {method}"] = hybrid_fuse(dense_r, csr_r, 10, method)
    qrels = [ir.qrels[q] for q in ir.query_ids]
    print(f"{ir.name}: {len(ir.queries)} queries, {len(ir.corpus)} documents; CSR trained in {trained:.0f} s on "
          f"{len(texts)} sentences and {len(pairs)} pairs (SNLI dev)\n")  # fmt: skip
    print("| ranking | nDCG@10 | recall@10 |")
    print("|---|---|---|")
    for name, (_, rows) in ranked.items():
        hits = [[ir.corpus_ids[r] for r in row[:10] if r >= 0] for row in rows]
        metrics = ir_metrics(hits, qrels)
        print(f"| {name} | {metrics['ndcg@10']:.2f} | {metrics.get('recall@10', float('nan')):.2f} |")


if __name__ == "__main__":
    main()
