"""Retrieval evaluation at 1,000,000 documents: sbert against sentence-transformers, same vectors, one run.

The reference is sentence-transformers' InformationRetrievalEvaluator.

    python benchmarks/speed/retrieval_speed.py [--corpus 1000000]

Collection: the SNLI-test retrieval set (`sbert data beir-from-nli`): 3,089 queries, 9,639 real
documents embedded by all-MiniLM-L6-v2, topped up to `--corpus` documents with synthetic vectors
drawn from a Gaussian with the real documents' mean and covariance (normalised; no million distinct
real sentences exist here), none of them relevant. Both sides get the precomputed query vectors
and the same corpus vectors; timed: search plus metrics. sbert streams the corpus in chunks of
50,000 generated on the fly (a real run embeds each chunk as it goes), so its memory is one chunk,
one block of scores and the running top-100; the reference needs the whole corpus matrix in memory.
Memory: the peak of traced allocations (NumPy and Python, not torch) and the process's peak RSS
growth of a streamed run (synthetic chunks generated as the search asks, their generation in its
time). Time: sbert and the reference on the same chunks held in memory, search plus metrics only.
Checks: both give the same metrics.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import ir_set
from sbert import SentenceEncoder
from sbert.evaluation.retrieval import CORPUS_CHUNK, ir_metrics, ranked_ids, search
from sbert.search.exact import unit_rows


def synthetic(real: np.ndarray, total: int, seed: int = 0) -> Iterator[np.ndarray]:
    """The real vectors, then Gaussian draws shaped like them, CORPUS_CHUNK rows at a time, up to `total`."""
    yield real
    rng = np.random.default_rng(seed)
    mean, cov = real.mean(0), np.cov(real, rowvar=False)
    factor = np.linalg.cholesky(cov + 1e-9 * np.eye(len(cov))).astype(np.float32)
    for start in range(len(real), total, CORPUS_CHUNK):
        noise = rng.standard_normal((min(CORPUS_CHUNK, total - start), len(mean)), dtype=np.float32)
        yield unit_rows(noise @ factor.T + mean.astype(np.float32))


def rss_mb() -> float:
    """Peak resident memory of this process so far, MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=int, default=1_000_000)
    args = parser.parse_args()
    data = ir_set("snli")
    query_ids, qrels = data.query_ids, data.qrels
    model = SentenceEncoder.load(device="cpu")
    q_vec = model.encode(data.queries)
    real = model.encode(data.corpus)
    doc_ids = data.corpus_ids + [f"synthetic{i}" for i in range(args.corpus - len(data.corpus))]
    judged = [qrels[q] for q in query_ids]

    small = ir_metrics(ranked_ids(*search(q_vec, iter([real])), data.corpus_ids), judged)
    # Memory first (peak RSS only grows): the corpus streamed, chunks generated as the search asks.
    before, start = rss_mb(), time.perf_counter()
    tracemalloc.start()
    streamed = ir_metrics(ranked_ids(*search(q_vec, synthetic(real, args.corpus)), doc_ids), judged)
    traced = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(json.dumps({"side": "sbert, streamed", "seconds_with_generation": time.perf_counter() - start,
                      "traced_peak_mb": traced, "rss_growth_mb": rss_mb() - before,
                      "ndcg@10": streamed["ndcg@10"], "ndcg@10_real_only": small["ndcg@10"]}), flush=True)  # fmt: skip
    # Time on the same chunks the reference gets, already in memory: search and metrics only.
    chunks = list(synthetic(real, args.corpus))
    start = time.perf_counter()
    ours = ir_metrics(ranked_ids(*search(q_vec, iter(chunks)), doc_ids), judged)
    seconds = time.perf_counter() - start
    print(json.dumps({"side": "sbert", "seconds": seconds, "ndcg@10": ours["ndcg@10"]}), flush=True)
    reference(model, q_vec, chunks, query_ids, doc_ids, qrels, ours, seconds)


def reference(
    model: SentenceEncoder, q_vec: np.ndarray, chunks: list[np.ndarray], query_ids: list[str],
    doc_ids: list[str], qrels: dict[str, dict[str, int]], ours: dict[str, float], our_seconds: float,
) -> None:  # fmt: skip
    """sentence-transformers' evaluator on the same vectors (the corpus as one matrix), timed and checked."""
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
    from sentence_transformers.util import cos_sim

    matrix = torch.from_numpy(np.concatenate(chunks))
    evaluator = InformationRetrievalEvaluator(
        {q: q for q in query_ids}, dict.fromkeys(doc_ids, ""), {q: set(d) for q, d in qrels.items()},
        accuracy_at_k=[1, 10], precision_recall_at_k=[1, 10, 100], map_at_k=[100], write_csv=False,
        score_functions={"cosine": cos_sim}, corpus_chunk_size=50_000,
    )  # fmt: skip
    vectors = dict(zip(query_ids, q_vec, strict=True))

    class Precomputed:  # hands the evaluator the same query vectors sbert used
        def encode_query(self, texts: list[str], **kwargs: object) -> torch.Tensor:
            return torch.from_numpy(np.stack([vectors[t] for t in texts]))

    evaluator.embed_inputs = lambda m, texts, **kw: Precomputed().encode_query(texts)  # type: ignore[method-assign]
    before, start = rss_mb(), time.perf_counter()
    theirs = evaluator.compute_all_metrics(model, corpus_embeddings=matrix)["cosine"]  # type: ignore[arg-type]
    seconds, grown = time.perf_counter() - start, rss_mb() - before
    gap = max(
        abs(ours["ndcg@10"] / 100 - theirs["ndcg@k"][10]), abs(ours["recall@100"] / 100 - theirs["recall@k"][100])
    )
    print(json.dumps({"side": "sentence-transformers", "seconds": seconds, "sbert_speedup": seconds / our_seconds,
                      "rss_growth_mb": grown,
                      "corpus_matrix_mb": matrix.numel() * 4 / 2**20, "ndcg@10": 100 * theirs["ndcg@k"][10],
                      "max_metric_gap": gap}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
