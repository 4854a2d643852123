"""Late chunking against plain chunking on a long-document retrieval set built from local data, the same model.

python benchmarks/quality/late_chunking.py [--group 8] [--min-score 4.0] [--beir-out DIR] [--json F]

The set: the STS benchmark's pairs (train, dev, test) scored >= --min-score are paraphrases. Their
first sentences, shuffled (seed 0), are joined --group at a time into documents; each second
sentence is a query whose one relevant document is the one holding its pair's first sentence.
--beir-out writes it in the BEIR layout (corpus.jsonl, queries.jsonl, qrels/test.tsv).
Every document is scored by its best chunk (a chunk = one of its sentences, spans known exactly):
  plain: each sentence encoded alone;  late: `encode_document(docs, chunks=spans)`, each sentence's
  vector from one pass over its whole document;  whole: one vector per document (truncated at the limit).
nDCG@10 (sbert.evaluation.retrieval), cosine scores; the default model all-MiniLM-L6-v2.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import cpu_facts, sts_pairs
from sbert import SentenceEncoder
from sbert.evaluation.retrieval import ir_metrics


def build(group: int, min_score: float) -> tuple[list[str], list[list[tuple[int, int]]], list[str], list[int]]:
    """Documents, each one's sentence spans, the queries and each query's relevant document."""
    pairs = [(a, b) for split in ("train", "dev", "test") for a, b, s in zip(*sts_pairs(split), strict=True)
             if s >= min_score]  # fmt: skip
    random.Random(0).shuffle(pairs)
    docs, spans, queries, relevant = [], [], [], []
    for d, start in enumerate(range(0, len(pairs) - group + 1, group)):
        text, row = "", []
        for first, second in pairs[start : start + group]:
            text += " " if text else ""
            row.append((len(text), len(text) + len(first)))
            text += first
            queries.append(second)
            relevant.append(d)
        docs.append(text)
        spans.append(row)
    return docs, spans, queries, relevant


def ndcg(query_vectors: np.ndarray, chunk_vectors: list[np.ndarray], relevant: list[int]) -> float:
    """nDCG@10 when a document scores as its best chunk (cosine)."""
    unit = query_vectors / np.linalg.norm(query_vectors, axis=1, keepdims=True)
    best = np.stack([(unit @ (c / np.linalg.norm(c, axis=1, keepdims=True)).T).max(axis=1) for c in chunk_vectors], 1)
    top = np.argsort(-best, axis=1, kind="stable")[:, :10]
    hits = [[str(d) for d in row] for row in top]
    return ir_metrics(hits, [{str(r): 1} for r in relevant])["ndcg@10"]


def write_beir(out: Path, docs: list[str], queries: list[str], relevant: list[int]) -> None:
    """The set in the BEIR layout, for any retrieval evaluator."""
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        f.writelines(json.dumps({"_id": str(i), "title": "", "text": t}) + "\n" for i, t in enumerate(docs))
    with (out / "queries.jsonl").open("w", encoding="utf-8") as f:
        f.writelines(json.dumps({"_id": f"q{i}", "text": q}) + "\n" for i, q in enumerate(queries))
    rows = ["query-id\tcorpus-id\tscore", *(f"q{i}\t{d}\t1" for i, d in enumerate(relevant))]
    (out / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--group", type=int, default=8, help="sentences per document")
    parser.add_argument("--min-score", type=float, default=4.0)
    parser.add_argument("--beir-out", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    docs, spans, queries, relevant = build(args.group, args.min_score)
    if args.beir_out:
        write_beir(args.beir_out, docs, queries, relevant)
    model = SentenceEncoder.load(device="cpu")
    q = model.encode_query(queries)
    sentences = [d[a:b] for d, row in zip(docs, spans, strict=True) for a, b in row]
    flat = model.encode_document(sentences)
    plain = [flat[i * args.group : (i + 1) * args.group] for i in range(len(docs))]
    late = model.encode_document(docs, chunks=spans)
    whole = [row[None] for row in model.encode_document(docs)]
    tokens = [len(r) for r in model.transformer.token_ids(docs)[0]]
    scores = {"plain": ndcg(q, plain, relevant), "late": ndcg(q, late, relevant), "whole": ndcg(q, whole, relevant)}
    facts = {k: v for k, v in cpu_facts().items() if k != "cpu_flags"}
    report = {"documents": len(docs), "queries": len(queries), "sentences_per_document": args.group,
              "mean_document_tokens": float(np.mean(tokens)), "ndcg@10": scores, **facts}  # fmt: skip
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
