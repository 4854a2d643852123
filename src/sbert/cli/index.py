"""`sbert index build CORPUS --out DIR`: embed a corpus and write a FAISS + SQLite index folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sbert.cli.common import add_backend_args, add_dtype_arg, add_model_args, load_encoder, read_lines
from sbert.errors import SbertError
from sbert.search.index import KINDS

if TYPE_CHECKING:
    from sbert.multivector import MultiVectorEncoder


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register `sbert index build`."""
    p = sub.add_parser("index", help="build a persistent search index", description=__doc__)
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    b = actions.add_parser("build", help="embed a corpus (one text per line) and index it")
    b.add_argument("corpus", help="UTF-8 text file, one document per line (id = line number - 1); or a folder of "
                   "images, embedded by an image-text model (CLIP, SigLIP): each hit is an image's path")  # fmt: skip
    b.add_argument("--out", required=True, help="index folder (replaced atomically when done)")
    b.add_argument("--kind", choices=KINDS, default="hnsw", help="FAISS index type (int8, binary: quantized, rescored)")
    b.add_argument("--no-rescore-vectors", action="store_true", help="quantized kinds: keep no full vectors")
    b.add_argument("--token-format", choices=("float16", "int8", "binary", "residual"), default="float16",
                   help="a multi-vector index's token storage: int8 (a quarter of float32), binary (a 32nd, "
                        "rescored with int8), residual (PLAID: a centroid id, 2 bits a dimension)")  # fmt: skip
    b.add_argument("--shard-size", type=int, default=100_000, help="rows per resumable embedding shard")
    b.add_argument("--sparse-model", help="also index sparse vectors of this SparseEncoder (SPLADE, CSR): "
                   "`sbert search --mode sparse|hybrid`")  # fmt: skip
    b.add_argument("--sparse-max-active-dims", type=int, help="keep each document's k largest sparse weights")
    b.add_argument("--sparse-approximate", action="store_true", help="also build a Seismic approximate index of "
                   "the sparse side (needs pyseismic-lsr); searches use it unless `sbert search --exact`")  # fmt: skip
    b.add_argument("--colbert-model", help="also index token matrices of this ColBERT model or BGE-M3 (its ColBERT "
                   "output), stored as --token-format: `sbert search --mode colbert`, `--fusion m3`")  # fmt: skip
    b.add_argument("--seismic-postings", type=int, default=4000, help="Seismic: documents kept per term (4000)")
    add_backend_args(b)
    add_model_args(b)
    add_dtype_arg(b)
    b.set_defaults(run=run)


def _corpus(source: str) -> list[str]:
    """The documents: a text file's lines, or a folder's images and PDF pages (`file.pdf#page=N`).

    The model embeds a folder's documents as images (an image-text or a page-image model).
    """
    if Path(source).is_dir():
        from sbert.formats.image_inputs import folder_documents

        found = folder_documents(source)
        if not found:
            raise SbertError(f"{source}: a folder corpus holds images (.jpg, .png, ...) and PDFs; found none")
        return found
    texts = read_lines(source)
    if not texts:
        raise SbertError(f"{source}: empty corpus, nothing to index")
    return texts


def run(args: argparse.Namespace) -> int:
    """Read the corpus, embed it (resumably), write the index."""
    from sbert.search.corpus import index_corpus
    from sbert.search.quantized_index import faiss_module

    faiss_module()  # the extra is checked before minutes of encoding, not after
    if args.shard_size <= 0:
        raise ValueError(f"--shard-size must be positive, got {args.shard_size}")
    if args.sparse_max_active_dims is not None and args.sparse_max_active_dims <= 0:
        raise SbertError(f"--sparse-max-active-dims must be positive, got {args.sparse_max_active_dims}")
    if args.sparse_approximate and not args.sparse_model:
        raise SbertError("--sparse-approximate indexes the sparse side: give --sparse-model too")
    if args.seismic_postings <= 0:
        raise SbertError(f"--seismic-postings must be positive, got {args.seismic_postings}")
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise SbertError(f"--out {args.out}: exists and is not a folder")
    texts = _corpus(args.corpus)
    if _multivector(args, texts):
        return 0
    colbert = None
    if args.colbert_model:  # a folder of the wrong kind fails before minutes of encoding
        from sbert.model_kind import load_multivector

        colbert = load_multivector(args.colbert_model, device=args.device)  # ColBERT, or BGE-M3's ColBERT view
    model = load_encoder(args)
    if Path(args.corpus).is_dir() and "image" not in getattr(model, "modalities", ("text",)):
        raise SbertError(f"{args.corpus}: a folder of images needs an image-text model (CLIP, SigLIP); "
                         f"{args.model or 'the default model'} embeds text only")  # fmt: skip
    name = _model_name(args.model)
    info = index_corpus(
        model, name, texts, args.out, args.kind, args.backend, args.shard_size, precision=args.precision,
        rescore_vectors=not args.no_rescore_vectors,
    )  # fmt: skip
    print(f"indexed {info.count} texts ({info.kind}, {info.dimension} dims) in {args.out}", file=sys.stderr)
    if args.sparse_model:
        from sbert.model_kind import load_sparse
        from sbert.search.seismic_index import SeismicSettings
        from sbert.search.sparse_side import add_sparse_side

        sparse = load_sparse(args.sparse_model, device=args.device)  # SPLADE, or BGE-M3's lexical weights
        seismic = SeismicSettings(n_postings=args.seismic_postings) if args.sparse_approximate else None
        side = add_sparse_side(args.out, sparse, _model_name(args.sparse_model), texts, args.sparse_max_active_dims,
                               seismic)  # fmt: skip
        kind = ", with a Seismic approximate index" if side.approximate else ""
        print(f"sparse side: {side.count} documents over {side.dimension} dimensions{kind}", file=sys.stderr)
    if colbert is not None:
        _colbert_side(args, colbert, texts)
    return 0


def _colbert_side(args: argparse.Namespace, model: MultiVectorEncoder, texts: list[str]) -> None:
    """--colbert-model: the documents' token matrices beside the dense index (search/colbert_side.py)."""
    from sbert.search.colbert_side import add_colbert_side

    encode = _encode_options(args)
    settings = add_colbert_side(args.out, model, _model_name(args.colbert_model), texts, args.token_format, encode)
    print(f"ColBERT side: {settings.count} documents, {settings.dimension} dims as {settings.token_format}",
          file=sys.stderr)  # fmt: skip


def _multivector(args: argparse.Namespace, texts: list[str]) -> bool:
    """A multi-vector --model: its token-matrix index (exact, MUVERA and centroid candidates); False otherwise."""
    from sbert.formats.model_dirs import resolve_model_dir
    from sbert.model_kind import kind_of

    root = resolve_model_dir(args.model)
    if kind_of(root) != "multi-vector":
        return False
    if args.sparse_model or args.colbert_model:
        raise SbertError("--sparse-model / --colbert-model: a multi-vector --model's index holds its token matrices "
                         "only; give a dense --model for a folder with several sides")  # fmt: skip
    from sbert.multivector import MultiVectorEncoder
    from sbert.search.multivector_index import IndexSettings, index_texts

    if args.dtype not in (None, "fp32", "auto"):
        raise SbertError(f"--dtype {args.dtype}: a multi-vector model holds fp32 weights; --precision casts its "
                         "encode (bf16, fp16) and --backend onnx-int8 / openvino-int8 runs it in int8")  # fmt: skip
    model = MultiVectorEncoder.load(root, device=args.device)
    settings = IndexSettings(dimension=model.embedding_dimension, token_format=args.token_format)
    encode = _encode_options(args)
    info = index_texts(model, texts, args.out, _model_name(args.model), settings, encode)
    print(f"indexed {info.count} texts (multi-vector, {info.dimension} dims as {info.token_format}, "
          f"{info.n_centroids} centroids) "
          f"in {args.out}", file=sys.stderr)  # fmt: skip
    return True


def _encode_options(args: argparse.Namespace) -> dict[str, object]:
    """The options a multi-vector model encodes the documents with (the index's own or its ColBERT side)."""
    return {"backend": args.backend, "precision": args.precision, "batch_tokens": args.batch_tokens}


def _model_name(model: str) -> str:
    """An absolute path for a local folder (the index may be searched from elsewhere), else the name as given."""
    return model if not Path(model).expanduser().is_dir() else str(Path(model).resolve())
