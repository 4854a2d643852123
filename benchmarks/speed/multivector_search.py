"""Multi-vector index: recall@10 against exact MaxSim, and queries/s, on a synthetic ColBERT-shaped corpus.

    python benchmarks/speed/multivector_search.py [--documents 100000] [--queries 200] [--json FILE]
        [--token-formats float16,int8,binary] [--pylate-python PEER_VENV/bin/python [--pylate-indexes plaid,voyager]]

The corpus imitates ColBERT token vectors (128-d, unit length): a vocabulary of 30,000 "word"
directions with Zipf-like frequencies (exponent 0.8); each document holds 20-60 tokens, each its
word's direction plus a document-specific context (length 0.3) and noise (0.3); each query is 8
tokens of one document (re-noised, 0.4) plus 24 expansion tokens that echo them more loosely
(0.8). Exact MaxSim over the whole corpus is the reference; MUVERA and PLAID's probed-centroid
stage each generate candidates that exact MaxSim reranks. Build time, recall@10 and queries/s (one query at a time,
median of the per-query rates over the run) are printed per method and setting. `--token-formats` adds, for
each compact storage (vectors/token_codes.py; residual: PLAID's centroid id plus 2 bits a dimension), the
token bytes and PLAID's default setting on it (and, for binary, "exact": every document scored on its bits,
the best 1,024 rescored on the int8 copy); recall
is always against exact MaxSim on the float32 vectors. `--pylate-python` (the peer venv `make bench-multivector`
builds) adds PyLate's own indexes on the same corpus and queries in the same run (benchmarks/speed/pylate_peer.py):
PLAID (fast-plaid) and Voyager (token HNSW, then PyLate's MaxSim rerank), each at its defaults, one query at a time.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from sbert.search.multivector_index import IndexSettings, MultiVectorIndex, residual_tokens
from sbert.vectors.maxsim import TokenSets

DIM = 128


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def noise(rng: np.random.Generator, shape: tuple[int, ...], norm: float) -> np.ndarray:
    """Gaussian vectors of expected length `norm` (per-dimension std norm / sqrt(DIM))."""
    return (rng.standard_normal(shape) * (norm / np.sqrt(DIM))).astype(np.float32)


def corpus(n_docs: int, n_queries: int, seed: int = 0) -> tuple[TokenSets, TokenSets]:
    """(documents, queries) as described in the module docstring."""
    rng = np.random.default_rng(seed)
    words = unit(rng.standard_normal((30_000, DIM)))
    zipf = 1.0 / np.arange(1, len(words) + 1) ** 0.8
    zipf /= zipf.sum()
    lengths = rng.integers(20, 61, n_docs)
    ids = rng.choice(len(words), int(lengths.sum()), p=zipf)
    context = np.repeat(noise(rng, (n_docs, DIM), 0.3), lengths, axis=0)
    tokens = unit(words[ids] + context + noise(rng, (len(ids), DIM), 0.3))
    offsets = np.r_[0, np.cumsum(lengths)]
    docs = TokenSets(tokens, offsets)
    queries = []
    for target in rng.integers(0, n_docs, n_queries):
        own = docs.matrix(int(target))
        picked = unit(own[rng.integers(0, len(own), 8)] + noise(rng, (8, DIM), 0.4))
        # expansion tokens echo the query's own tokens (what [MASK] expansion learns), more loosely
        expansion = unit(picked[rng.integers(0, 8, 24)] + noise(rng, (24, DIM), 0.8))
        queries.append(np.concatenate([picked, expansion]))
    return docs, TokenSets.pack(queries)


def timed_search(index: MultiVectorIndex, queries: TokenSets, **options: object) -> tuple[np.ndarray, float]:
    """(ids (n, 10), queries/s: the median over queries searched one at a time)."""
    ids, rates = [], []
    for q in range(len(queries)):
        one = TokenSets.pack([queries.matrix(q)])
        start = time.perf_counter()
        ids.append(index.search(one, top_k=10, **options)[1][0])  # type: ignore[arg-type]
        rates.append(1.0 / (time.perf_counter() - start))
    return np.stack(ids), float(np.median(rates))


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    """Mean share of the exact top 10 found."""
    return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found, exact, strict=True)]))


def format_rows(
    index: MultiVectorIndex,
    docs: TokenSets,
    queries: TokenSets,
    exact: np.ndarray,
    formats: list[str],
    residual_bits: int = 2,
) -> list[dict[str, object]]:
    """PLAID's default (and binary's rescored exact) on each compact storage, sharing the built centroids."""
    rows: list[dict[str, object]] = []
    for fmt in formats:
        rescore = docs.compact("int8") if fmt == "binary" else None
        if fmt == "residual":  # PLAID's compression against the index's own centroids, 2 bits a dimension
            assert index.centroids is not None and index.codes is not None
            stored = residual_tokens(docs, index.centroids, np.asarray(index.codes), residual_bits, 0)
        else:
            stored = docs.compact(fmt)
        compact = MultiVectorIndex(stored, replace(index.settings, token_format=fmt), index.muvera, index.centroids,
                                   index.codes, rescore)  # fmt: skip
        size = stored.nbytes + (rescore.nbytes if rescore is not None else 0)
        name = f"residual {residual_bits}-bit" if fmt == "residual" else fmt
        setting = f"{name} tokens, {size / 2**20:.0f} MiB" + (" (bits + int8 copy)" if rescore is not None else "")
        runs = [("plaid", {"method": "plaid", "candidates": 1024, "probes": 8})]
        runs += [("exact (bits, int8 rescoring)", {"method": "exact", "candidates": 1024})] if fmt == "binary" else []
        for name, options in runs:
            found, qps = timed_search(compact, queries, **options)
            rows.append(
                {"method": name, "setting": setting, "recall_at_10": recall(found, exact), "queries_per_s": qps}
            )
        print(f"{fmt}: {size / 2**20:.0f} MiB of tokens (float32: {docs.nbytes / 2**20:.0f} MiB)", flush=True)
    return rows


def pylate_rows(python: str, kinds: list[str], docs: TokenSets, queries: TokenSets, exact: np.ndarray,
                ) -> list[dict[str, object]]:  # fmt: skip
    """PyLate's indexes (at their defaults) on the same corpus, run by pylate_peer.py in the peer venv."""
    rows: list[dict[str, object]] = []
    peer = Path(__file__).resolve().with_name("pylate_peer.py")
    with tempfile.TemporaryDirectory(prefix="mv-pylate-") as tmp:
        data = Path(tmp) / "corpus.npz"
        np.savez(data, tokens=docs.tokens, offsets=docs.offsets, query_tokens=queries.tokens,
                 query_offsets=queries.offsets)  # fmt: skip
        for kind in kinds:
            out = Path(tmp) / f"{kind}.json"
            subprocess.run([python, str(peer), "search", str(data), str(out), kind], check=True)
            record = json.loads(out.read_text())
            rows.append({"method": f"PyLate {kind}", "setting": f"defaults; build {record['build_s']:.0f} s; "
                         f"all queries in one call: {record['batched_queries_per_s']:.1f}/s",
                         "recall_at_10": recall(np.asarray(record["ids"]), exact),
                         "queries_per_s": record["queries_per_s"]})  # fmt: skip
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    """Build, search with every method, print a table (and write it as JSON)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--token-formats", default="", help="comma-separated compact storages to compare too")
    parser.add_argument("--residual-bits", type=int, default=2, help="bits a dimension of the residual storage")
    parser.add_argument("--pylate-python", help="the peer venv's python with PyLate (make bench-multivector)")
    parser.add_argument("--pylate-indexes", default="plaid,voyager", help="PyLate indexes to run with --pylate-python")
    args = parser.parse_args()
    docs, queries = corpus(args.documents, args.queries)
    start = time.perf_counter()
    index = MultiVectorIndex.build(docs, IndexSettings(dimension=DIM))
    build_s = time.perf_counter() - start
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((line.split(":", 1)[1].strip() for line in cpu.splitlines() if line.startswith("Model name")), "")
    print(f"{len(docs)} documents, {len(docs.tokens)} tokens; build {build_s:.0f} s "
          f"({index.settings.n_centroids} centroids); CPU {model or platform.processor()}")  # fmt: skip
    exact, exact_qps = timed_search(index, queries)
    rows = [{"method": "exact", "setting": f"sbert build {build_s:.0f} s", "recall_at_10": 1.0,
             "queries_per_s": exact_qps}]  # fmt: skip
    if args.pylate_python:
        rows += pylate_rows(args.pylate_python, args.pylate_indexes.split(","), docs, queries, exact)
    for depth in (256, 1024, 4096):
        found, qps = timed_search(index, queries, method="muvera", candidates=depth)
        rows.append({"method": "muvera", "setting": f"candidates={depth}", "recall_at_10": recall(found, exact),
                     "queries_per_s": qps})  # fmt: skip
    for probes, depth in ((4, 256), (8, 1024), (8, 2048)):
        found, qps = timed_search(index, queries, method="plaid", candidates=depth, probes=probes)
        rows.append({"method": "plaid", "setting": f"probes={probes}, candidates={depth}",
                     "recall_at_10": recall(found, exact), "queries_per_s": qps})  # fmt: skip
    rows += format_rows(
        index, docs, queries, exact, [f for f in args.token_formats.split(",") if f], args.residual_bits
    )
    print("| method | setting | recall@10 vs exact | queries/s (median) |\n|---|---|---|---|")
    for row in rows:
        print(f"| {row['method']} | {row['setting']} | {row['recall_at_10']:.3f} | {row['queries_per_s']:.1f} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"build_s": build_s, "documents": len(docs), "cpu": model, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
