"""Retrieve, then rerank, on the SNLI-derived retrieval set: nDCG@10 and time per query, 2 CPU cores.

    python benchmarks/quality/rerank_quality.py [--queries 1000] [--out /tmp/sbert-reranker] [--random-negatives K]

1. Trains a cross-encoder (`sbert.CrossEncoder`, a fresh one-score head on all-MiniLM-L6-v2's
   encoder) on SNLI dev pairs, entailment against the rest (9,842 pairs, one epoch, batch 16,
   lr 2e-5), plus K random negatives per entailment pair (another premise's hypothesis, scored 0),
   unless --out already holds one (then it is reused). --train triplets:FILE trains on triplets
   instead, e.g. SNLI dev's entailment pairs with negatives mined by all-MiniLM-L6-v2:
   `sbert mine-negatives --pairs nli:../shared/data/snli:dev --negatives 4 --n-tuple -o FILE`;
   --train stsb:sts-train.csv --collection sts: an STS-trained cross-encoder on the STSb-test
   set (`sbert data beir-from-sts`: 309 queries, pairs scored >= 4 of 5 relevant).
2. The SNLI-test collection (`sbert data beir-from-nli`: premises query their entailed hypotheses;
   the neutral and contradicting hypotheses of the same premise sit in the corpus as hard
   negatives): all-MiniLM-L6-v2 retrieves by exact cosine, then the cross-encoder reorders each
   query's top 20 and top 100 (`sbert.evaluation.retrieval.rerank_hits`, what `sbert eval
   --reranker` runs). Times per query: encoding the query plus the search; the reranking.
   The corpus is embedded once beforehand (index time, reported apart).
3. Reference in the same run: sentence-transformers' CrossEncoder.predict on the same pairs (the
   first --compare-queries queries' top 100), same weights; scores must agree to 1e-4.
Prints one JSON line per measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import STS_DIR, ir_set
from sbert import SentenceEncoder
from sbert.data import load_dataset
from sbert.data.beir import IRCollection
from sbert.evaluation.retrieval import ir_metrics, ranked_ids, rerank_hits, search
from sbert.reranker.model import CrossEncoder
from sbert.training.cross_encoder import CrossFitSettings, fit_cross_encoder

SNLI = STS_DIR.parent / "snli"


def reranker(out: Path, train_spec: str | None, random_negatives: int) -> CrossEncoder:
    """The cross-encoder at `out`, trained there first when missing (SNLI dev, or `train_spec` triplets)."""
    if out.is_dir():
        return CrossEncoder.load(out, device="cpu")
    model = CrossEncoder.new("all-MiniLM-L6-v2", device="cpu")
    train = load_dataset(train_spec or f"nli:{SNLI}:dev")
    positive = "entailment" if train.kind == "pair-class" else None  # scored pairs and triplets need none
    settings = CrossFitSettings(batch_size=16, lr=2e-5, positive_label=positive, random_negatives=random_negatives)
    seconds = fit_cross_encoder(model, train, settings)
    model.save(out)
    print(json.dumps({"step": "train reranker", "data": train.name, "rows": len(train),
                      "random_negatives": random_negatives, "seconds": round(seconds, 1)}), flush=True)  # fmt: skip
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/sbert-reranker"))
    parser.add_argument("--compare-queries", type=int, default=50)
    parser.add_argument("--random-negatives", type=int, default=0, help="random negatives per entailment pair")
    parser.add_argument("--train", help="FORMAT:PATH to train on instead: triplets:FILE (mined), stsb:sts-train.csv")
    parser.add_argument("--collection", choices=("snli", "sts"), default="snli", help="sts: the STSb-test set")
    args = parser.parse_args()
    cross = reranker(args.out, args.train, args.random_negatives)
    data = ir_set(args.collection, args.queries)
    encoder = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    start = time.perf_counter()
    corpus_vectors = encoder.encode(data.corpus)
    print(json.dumps({"step": "embed corpus", "documents": len(data.corpus),
                      "seconds": round(time.perf_counter() - start, 1)}), flush=True)  # fmt: skip
    start = time.perf_counter()
    scores, rows = search(encoder.encode(data.queries), [corpus_vectors])
    hits = ranked_ids(scores, rows, data.corpus_ids)
    retrieval_ms = 1000 * (time.perf_counter() - start) / len(data)
    judged = [data.qrels[q] for q in data.query_ids]
    alone = ir_metrics(hits, judged)
    print(json.dumps({"pipeline": "retrieval", "queries": len(data), "ndcg@10": round(alone["ndcg@10"], 2),
                      "mrr@10": round(alone["mrr@10"], 2), "ms_per_query": round(retrieval_ms, 2)}),
          flush=True)  # fmt: skip
    for top in (20, 100):
        start = time.perf_counter()
        reranked = ir_metrics(rerank_hits(cross, data, hits, top, None), judged)
        rerank_ms = 1000 * (time.perf_counter() - start) / len(data)
        print(json.dumps({"pipeline": f"retrieval + rerank top {top}", "queries": len(data),
                          "ndcg@10": round(reranked["ndcg@10"], 2), "mrr@10": round(reranked["mrr@10"], 2),
                          "ms_per_query": round(retrieval_ms + rerank_ms, 2),
                          "rerank_ms_per_query": round(rerank_ms, 2)}), flush=True)  # fmt: skip
    if args.compare_queries > 0:
        compare(cross, args.out, data, hits, args.compare_queries)


def compare(cross: CrossEncoder, folder: Path, data: IRCollection, hits: list[list[str]], queries: int) -> None:
    """Our predict against sentence-transformers' on the same pairs: pairs per second and agreement."""
    from sentence_transformers import CrossEncoder as STCrossEncoder

    text = dict(zip(data.corpus_ids, data.corpus, strict=True))
    pairs = [(q, text[d]) for q, row in zip(data.queries[:queries], hits[:queries], strict=True) for d in row[:100]]
    reference = STCrossEncoder(str(folder), device="cpu")
    timings: dict[str, list[float]] = {"sbert": [], "sentence-transformers": []}
    outputs = {}
    for _ in range(3):  # alternating, so drift on the shared machine hits both alike
        for name, run in (("sbert", lambda: cross.predict(pairs)),
                          ("sentence-transformers", lambda: reference.predict(pairs, batch_size=32))):  # fmt: skip
            start = time.perf_counter()
            outputs[name] = np.asarray(run())
            timings[name].append(time.perf_counter() - start)
    ours, theirs = (float(np.median(timings[k])) for k in ("sbert", "sentence-transformers"))
    gap = float(np.abs(outputs["sbert"] - outputs["sentence-transformers"]).max())
    print(json.dumps({"step": "predict speed", "pairs": len(pairs), "sbert_pairs_per_s": round(len(pairs) / ours),
                      "st_pairs_per_s": round(len(pairs) / theirs), "speedup": round(theirs / ours, 2),
                      "max_score_gap": gap}), flush=True)  # fmt: skip
    assert gap < 1e-4, gap


if __name__ == "__main__":
    main()
