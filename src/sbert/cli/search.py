"""`sbert search DIR "query" ...`: top-k texts from an index folder built by `sbert index build`."""

from __future__ import annotations

import argparse
import json
from typing import Any

from sbert.cli.common import add_dtype_arg, add_precision_arg, load_m3


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("search", help="query an index folder", description=__doc__)
    p.add_argument("index", help="folder written by `sbert index build`")
    p.add_argument("query", nargs="+", help="one or more query texts")
    p.add_argument("--top-k", "-k", type=int, default=10)
    p.add_argument("--model", "-m", default=None, help="query model (default: the one that built the index)")
    p.add_argument("--device", default=None, help="cpu, cuda, ...")
    from sbert.names import BACKEND_NAMES

    p.add_argument("--backend", choices=BACKEND_NAMES, default="torch")
    p.add_argument("--rerank", metavar="CROSS_ENCODER", help="rerank the top hits with this cross-encoder folder")
    p.add_argument("--rerank-top", type=int, default=100, help="hits the cross-encoder reorders (default 100)")
    p.add_argument("--mode", choices=("dense", "sparse", "hybrid"), default="dense",
                   help="sparse / hybrid need an index built with --sparse-model")  # fmt: skip
    p.add_argument("--fusion", choices=("rrf", "weighted"), default="rrf", help="how hybrid fuses the two rankings")
    p.add_argument("--exact", action="store_true", help="sparse / hybrid: search the exact postings even where "
                   "the index has a Seismic approximate index")  # fmt: skip
    p.add_argument("--alpha", type=float, default=0.5, help="weighted fusion: the dense ranking's weight")
    p.add_argument("--method", choices=("exact", "muvera", "plaid"), default="plaid",
                   help="multi-vector index: exact MaxSim, or MUVERA / centroid candidates reranked by it")  # fmt: skip
    add_precision_arg(p)
    p.add_argument("--json", action="store_true", help="one JSON object per query")
    add_dtype_arg(p)  # default: the dtype the index was built with
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Open the index (checking it first), embed the queries, print the hits (reranked with --rerank)."""
    from sbert.search.index import SearchIndex

    if args.top_k <= 0:
        raise ValueError(f"--top-k must be positive, got {args.top_k}")
    if args.rerank and args.rerank_top < args.top_k:
        raise ValueError(f"--rerank-top ({args.rerank_top}) must be >= --top-k ({args.top_k})")
    from sbert.search.multivector_index import is_multivector_index

    if is_multivector_index(args.index):
        return _multivector_search(args)
    index = SearchIndex(args.index)
    reranker = None
    if args.rerank:
        from sbert.cross_encoder import CrossEncoder

        reranker = CrossEncoder.load(args.rerank, device=args.device)  # a bad folder fails before the encoder loads
    depth = args.rerank_top if reranker else args.top_k
    deep = max(depth, 100) if args.mode == "hybrid" else depth  # fusion sees each ranking's top 100 at least
    dense = _dense_hits(args, index, deep) if args.mode != "sparse" else []
    sparse = _sparse_hits(args, index, deep) if args.mode != "dense" else []
    hits = (
        dense
        if args.mode == "dense"
        else sparse
        if args.mode == "sparse"
        else _fused(args, index, dense, sparse, depth)
    )
    if reranker is not None:
        hits = index.rerank(reranker, args.query, hits, args.top_k)
    for query, row in zip(args.query, hits, strict=True):
        if args.json:
            print(json.dumps({"query": query, "hits": [h.__dict__ for h in row]}, ensure_ascii=False))
            continue
        print(f"# {query}")
        for rank, hit in enumerate(row, start=1):
            print(f"{rank:>3}. {hit.score:.4f}  [{hit.id}] {hit.text}")
    return 0


def _multivector_search(args: argparse.Namespace) -> int:
    """Queries against a multi-vector index, encoded by the model that built it."""
    from sbert.errors import SbertError
    from sbert.multivector import MultiVectorEncoder
    from sbert.search.multivector_index import MultiVectorIndex

    if args.rerank or args.mode != "dense":
        raise SbertError("a multi-vector index takes neither --rerank nor --mode: it ranks by MaxSim")
    index = MultiVectorIndex.load(args.index)
    model = MultiVectorEncoder.load(args.model or index.settings.model, device=args.device)
    queries = model.encode_query(args.query, output="packed")
    scores, ids = index.search(queries, args.top_k, method=args.method)
    texts = index.texts([int(i) for i in ids.ravel() if i >= 0])
    for query, row_s, row_i in zip(args.query, scores, ids, strict=True):
        hits = [{"id": int(i), "score": float(s), "text": texts.get(int(i), "")} for s, i in zip(row_s, row_i,
                strict=True) if i >= 0]  # fmt: skip
        if args.json:
            print(json.dumps({"query": query, "hits": hits}, ensure_ascii=False))
            continue
        print(f"# {query}")
        for rank, hit in enumerate(hits, start=1):
            print(f"{rank:>3}. {hit['score']:.4f}  [{hit['id']}] {hit['text']}")
    return 0


def _dense_hits(args: argparse.Namespace, index: Any, depth: int) -> list[Any]:
    """The dense index's hits for the queries, embedded by the model that built it (checked)."""
    from sbert.dense.model import SentenceEncoder
    from sbert.formats.model_dirs import resolve_model_dir
    from sbert.model_kind import kind_of
    from sbert.static import StaticEncoder

    root = resolve_model_dir(args.model or index.info.model)
    dtype = args.dtype or index.info.dtype  # the weights as the index's model held them, unless told otherwise
    kind = kind_of(root)
    if kind == "m3":  # BGE-M3's dense output, as `sbert index build` embedded the documents with it
        from sbert.m3.views import dense_view

        model: SentenceEncoder | StaticEncoder = dense_view(load_m3(root, args.device))
    else:
        model = StaticEncoder.load(root) if kind == "static" else SentenceEncoder.load(root, device=args.device,
                                                                                          dtype=dtype)  # fmt: skip
    index.check_model(model.weights_digest(), model.embedding_dimension)
    index.check_prompt(model.prompt_plan(task="document").text)  # documents got the document prompt at build time
    vectors = model.encode_query(args.query, normalize=True, backend=args.backend, precision=args.precision)
    return list(index.search(vectors, depth))


def _sparse_hits(args: argparse.Namespace, index: Any, depth: int) -> list[Any]:
    """The sparse side's hits, the queries encoded by the sparse model that built it (checked by digest)."""
    from sbert.model_kind import load_sparse
    from sbert.search.sparse_side import open_sparse_side, sparse_hits, sparse_info

    model = load_sparse(sparse_info(index).model, device=args.device)
    return sparse_hits(index, open_sparse_side(index, model, args.exact), model.encode_query(args.query), depth)


def _fused(args: argparse.Namespace, index: Any, dense: list[Any], sparse: list[Any], depth: int) -> list[Any]:
    from sbert.search.sparse_side import hybrid_hits

    return hybrid_hits(index, dense, sparse, depth, args.fusion, args.alpha)
