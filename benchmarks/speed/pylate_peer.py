"""PyLate as a peer of the multi-vector benchmarks; runs in its own venv (`make bench-multivector` builds it).

    PYTHON_PYLATE benchmarks/speed/pylate_peer.py search CORPUS.npz OUT.json plaid|voyager [--setting K=V ...]
    PYTHON_PYLATE benchmarks/speed/pylate_peer.py build BERT_DIR OUT_DIR       # a ColBERT saved by PyLate
    PYTHON_PYLATE benchmarks/speed/pylate_peer.py encode MODEL_DIR TEXTS.json OUT.npz [--batch-size N]

`search` builds one of PyLate's indexes over the documents in CORPUS.npz (`tokens` float32 (N, dim),
`offsets` (D + 1,), `query_tokens`, `query_offsets`), then retrieves the top 10 of each query one
query at a time through `pylate.retrieve.ColBERT`, as a user does. OUT.json gets the build seconds,
the median per-query rate, the batched rate (every query in one call) and the ids found.
`build` wraps a (random-weight) BERT folder in PyLate's ColBERT at its defaults (a 128-d projection,
[Q] / [D] prefixes, query expansion to 32, documents cut at 180, the punctuation skiplist) and saves it
in PyLate's layout. `encode` loads a ColBERT folder with `pylate.models.ColBERT` and times encoding
the texts as documents, then as queries, as multivector_encode.py's children time sbert and
sentence-transformers: OUT.npz gets the token counts and the token vectors, stdout one JSON line.

Only PyLate, torch and numpy are imported: this file never sees sbert. PyLate 1.6 pins
sentence-transformers 5.3, transformers <= 5.3 and fast-plaid built for torch 2.11 (a CUDA build:
fast-plaid's extension crashes on torch 2.13's CPU build), so it cannot share sbert's venv.
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


def _sets(tokens: np.ndarray, offsets: np.ndarray) -> list[torch.Tensor]:
    """One (n_tokens, dim) float32 tensor per set, sharing the packed array's memory."""
    flat = torch.from_numpy(np.ascontiguousarray(tokens, dtype=np.float32))
    return [flat[int(a) : int(b)] for a, b in itertools.pairwise(offsets)]


def _index(kind: str, folder: str, settings: dict[str, int]) -> object:
    """A fresh PyLate index of `kind` with `settings` over its defaults (CPU, no progress bars)."""
    from pylate import indexes

    if kind == "plaid":
        return indexes.PLAID(index_folder=folder, index_name="bench", override=True, device="cpu",
                             show_progress=False, **settings)  # fmt: skip
    if kind == "voyager":
        return indexes.Voyager(index_folder=folder, index_name="bench", override=True, **settings)
    raise SystemExit(f"unknown PyLate index {kind!r}: plaid or voyager")


def search(corpus: Path, out: Path, kind: str, settings: dict[str, int]) -> None:
    """Build `kind` over the corpus's documents, search its queries, write the timings and ids."""
    from pylate import retrieve

    data = np.load(corpus)
    docs = _sets(data["tokens"], data["offsets"])
    queries = _sets(data["query_tokens"], data["query_offsets"])
    folder = tempfile.mkdtemp(prefix="pylate-index-")
    try:
        start = time.perf_counter()
        index = _index(kind, folder, settings)
        index.add_documents(documents_ids=[str(i) for i in range(len(docs))], documents_embeddings=docs)  # type: ignore[attr-defined]
        build_s = time.perf_counter() - start
        retriever = retrieve.ColBERT(index=index)
        retriever.retrieve(queries_embeddings=[queries[0]], k=10)  # warm-up, untimed
        ids, rates = [], []
        for query in queries:
            start = time.perf_counter()
            hits = retriever.retrieve(queries_embeddings=[query], k=10)[0]
            rates.append(1.0 / (time.perf_counter() - start))
            ids.append([int(hit["id"]) for hit in hits])
        start = time.perf_counter()
        retriever.retrieve(queries_embeddings=queries, k=10)
        batched = len(queries) / (time.perf_counter() - start)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    record = {"index": kind, "settings": settings, "build_s": build_s, "queries_per_s": float(np.median(rates)),
              "batched_queries_per_s": batched, "ids": ids}  # fmt: skip
    out.write_text(json.dumps(record))


def build(bert_dir: Path, out: Path) -> None:
    """PyLate's ColBERT over `bert_dir` at its defaults (seeded projection), saved by PyLate in its layout."""
    from pylate import models

    torch.manual_seed(0)
    models.ColBERT(model_name_or_path=str(bert_dir), embedding_size=128, device="cpu").save(str(out))


def encode(model_dir: Path, texts_file: Path, out: Path, batch_size: int) -> None:
    """Warm up, time documents then queries once; save the matrices; print seconds and peak RSS."""
    from pylate import models

    texts = json.loads(texts_file.read_text())
    model = models.ColBERT(model_name_or_path=str(model_dir), device="cpu")
    model.encode(texts[:64], is_query=False, batch_size=batch_size, show_progress_bar=False)  # untimed
    times, matrices = [], []
    for is_query in (False, True):
        start = time.perf_counter()
        vectors = model.encode(texts, is_query=is_query, batch_size=batch_size, show_progress_bar=False)
        times.append(time.perf_counter() - start)
        matrices += [np.asarray(v, np.float32) for v in vectors]
    np.savez(out, lengths=np.array([len(m) for m in matrices]), tokens=np.concatenate(matrices))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(json.dumps({"documents_s": times[0], "queries_s": times[1], "peak_gib": peak}))


def main() -> None:
    """Dispatch the three commands."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("search")
    s.add_argument("corpus", type=Path)
    s.add_argument("out", type=Path)
    s.add_argument("index", choices=("plaid", "voyager"))
    s.add_argument("--setting", action="append", default=[], help="NAME=INT passed to the index, e.g. n_ivf_probe=8")
    b = commands.add_parser("build")
    b.add_argument("bert_dir", type=Path)
    b.add_argument("out", type=Path)
    e = commands.add_parser("encode")
    e.add_argument("model_dir", type=Path)
    e.add_argument("texts", type=Path)
    e.add_argument("out", type=Path)
    e.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    if args.command == "search":
        settings = {k: int(v) for k, v in (item.split("=", 1) for item in args.setting)}
        search(args.corpus, args.out, args.index, settings)
    elif args.command == "build":
        build(args.bert_dir, args.out)
    else:
        encode(args.model_dir, args.texts, args.out, args.batch_size)


if __name__ == "__main__":
    main()
