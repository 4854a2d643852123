"""`sbert search DIR "query" ...`: top-k texts from an index folder built by `sbert index build`."""

from __future__ import annotations

import argparse
import json
from typing import Any

from sbert.cli.common import add_dtype_arg, add_precision_arg, load_m3
from sbert.formats.pdf_pages import page_fields
from sbert.search.weighted_fusion import DEFAULT_WEIGHTS, check_weights


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
    p.add_argument(
        "--mode",
        choices=("dense", "sparse", "hybrid", "colbert"),
        default="dense",
        help="sparse / hybrid need an index built with --sparse-model, colbert one with --colbert-model",
    )
    p.add_argument(
        "--fusion",
        choices=("rrf", "weighted", "m3"),
        default="rrf",
        help="how hybrid fuses the rankings: rrf, weighted (min-max'd, --alpha) or m3 (FlagEmbedding's "
        "weighted score: every candidate's raw dense, sparse and ColBERT scores, --weights)",
    )
    p.add_argument("--weights", type=float, nargs=3, default=list(DEFAULT_WEIGHTS),
                   metavar=("DENSE", "SPARSE", "COLBERT"),
                   help="m3 fusion: the three scores' weights (default 1 1 1, as compute_score; BGE-M3's README "
                        "uses 0.4 0.2 0.4); a ColBERT weight above 0 needs the index's ColBERT side")  # fmt: skip
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
    if args.fusion == "m3":
        check_weights(args.weights, 3)  # before any model loads
    from sbert.search.multivector_index import is_multivector_index

    if is_multivector_index(args.index):
        return _multivector_search(args)
    index = SearchIndex(args.index)
    reranker = None
    if args.rerank:
        from sbert.reranker.model import CrossEncoder

        reranker = CrossEncoder.load(args.rerank, device=args.device)  # a bad folder fails before the encoder loads
    depth = args.rerank_top if reranker else args.top_k
    hits = _hits(args, index, depth)
    if reranker is not None:
        hits = index.rerank(reranker, args.query, hits, args.top_k)
    for query, row in zip(args.query, hits, strict=True):
        if args.json:
            found = [h.__dict__ | page_fields(h.text) for h in row]  # a PDF page's hit names its file and page
            print(json.dumps({"query": query, "hits": found}, ensure_ascii=False))
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
        hits = [hit | page_fields(str(hit["text"])) for hit in hits]  # a PDF page's hit names its file and page
        if args.json:
            print(json.dumps({"query": query, "hits": hits}, ensure_ascii=False))
            continue
        print(f"# {query}")
        for rank, hit in enumerate(hits, start=1):
            print(f"{rank:>3}. {hit['score']:.4f}  [{hit['id']}] {hit['text']}")
    return 0


def _hits(args: argparse.Namespace, index: Any, depth: int) -> list[Any]:
    """The queries' hits in `args.mode`, fused as `args.fusion` says for hybrid."""
    deep = max(depth, 100) if args.mode == "hybrid" else depth  # fusion sees each ranking's top 100 at least
    if args.mode == "colbert":
        from sbert.search.colbert_side import colbert_hits

        side, tokens = _colbert_queries(args, index)
        return colbert_hits(index, side, tokens, depth, args.method)
    vectors = _dense_queries(args, index) if args.mode != "sparse" else None
    dense = list(index.search(vectors, deep)) if vectors is not None else []
    if args.mode == "dense":
        return dense
    from sbert.search.sparse_side import hybrid_hits, sparse_hits

    side, rows = _sparse_queries(args, index, exact=args.exact or args.fusion == "m3")
    sparse = sparse_hits(index, side, rows, deep)
    if args.mode == "sparse":
        return sparse
    if args.fusion != "m3":
        return hybrid_hits(index, dense, sparse, depth, args.fusion, args.alpha)
    from sbert.search.colbert_side import has_colbert_side
    from sbert.search.weighted_fusion import QuerySides, three_way_hits

    colbert = _colbert_queries(args, index) if args.weights[2] > 0 and has_colbert_side(index) else None
    queries = QuerySides(vectors, rows, side, colbert)  # type: ignore[arg-type]
    return three_way_hits(index, (dense, sparse), queries, args.weights, depth)


def _dense_queries(args: argparse.Namespace, index: Any) -> Any:
    """The queries embedded by the dense model that built the index (checked by digest and prompt)."""
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
    return model.encode_query(args.query, normalize=True, backend=args.backend, precision=args.precision)


def _sparse_queries(args: argparse.Namespace, index: Any, exact: bool) -> tuple[Any, Any]:
    """The sparse side (exact postings when `exact`) and the queries encoded by the model that built it."""
    from sbert.model_kind import load_sparse
    from sbert.search.sparse_side import open_sparse_side, sparse_info

    model = load_sparse(sparse_info(index).model, device=args.device)
    return open_sparse_side(index, model, exact), model.encode_query(args.query)


def _colbert_queries(args: argparse.Namespace, index: Any) -> tuple[Any, Any]:
    """The ColBERT side and the queries' token matrices from the model that built it (checked by digest)."""
    from sbert.model_kind import load_multivector
    from sbert.search.colbert_side import colbert_info, open_colbert_side

    model = load_multivector(colbert_info(index).model, device=args.device)
    return open_colbert_side(index, model), model.encode_query(args.query, output="packed")
