"""`sbert serve`: an OpenAI-compatible embedding server (dynamic batching, search, metrics, web page)."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sbert.cli.common import add_dtype_arg, add_model_args, add_precision_arg, load_encoder, load_m3
from sbert.errors import SbertError
from sbert.serve.settings import HTTP_PARSERS

if TYPE_CHECKING:
    from sbert.serve.settings import ServeSettings


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    routes = "/v1/embeddings, /v1/rerank, /similarity, /search, /metrics"
    p = sub.add_parser("serve", help=f"HTTP server: {routes}", description=__doc__,
                       epilog="--model may name any kind: dense, static, sparse (SPLADE, CSR) or a cross-encoder; "
                       "the routes that kind answers are served, the others answer 404 in one line")  # fmt: skip
    _add_model_flags(p)
    _add_network_flags(p)
    _add_batching_flags(p)
    _add_limit_flags(p)
    p.set_defaults(run=run)


def _add_model_flags(p: argparse.ArgumentParser) -> None:
    """What is served: the model, its engine and precision, the index, the reranker and sparse model, names."""
    from sbert.names import BACKEND_NAMES

    add_model_args(p)
    add_dtype_arg(p)
    p.add_argument("--backend", choices=BACKEND_NAMES, default="torch", help="inference engine (default torch)")
    p.add_argument("--index", help="index folder from `sbert index build`, for /search and the page")
    p.add_argument("--served-name", help="the `model` name clients send (default: --model's name)")
    p.add_argument("--reranker", help="a cross-encoder folder to serve at /v1/rerank")
    p.add_argument("--sparse-model", help="a SPLADE folder (sbert.SparseEncoder) to serve at TEI's /embed_sparse")
    p.add_argument("--calibration", help="ranges.npy (2 x dim) for int8/uint8 embeddings (default: an int8 index's, "
                   "else ranges fitted at start-up on texts the package ships)")  # fmt: skip
    p.add_argument("--reranker-name", help="the `model` name rerank clients send (default: the folder's name)")
    add_precision_arg(p)
    p.add_argument("--token-ids", choices=("tiktoken", "model"), default="tiktoken",
                   help="whose ids /v1/embeddings' token-id inputs are: tiktoken's, as LangChain's OpenAIEmbeddings "
                   "sends them (default), or the served model's tokenizer's")  # fmt: skip


def _add_network_flags(p: argparse.ArgumentParser) -> None:
    """Where and to whom it listens: address, key, parser, deadlines, connections, Host names."""
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback only)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument(
        "--api-key", default=os.environ.get("SBERT_API_KEY"),
        help="require this key (visible in ps: prefer $SBERT_API_KEY or --api-key-file)",
    )  # fmt: skip
    p.add_argument("--api-key-file", type=Path, help="read the key from the first line of this file")
    p.add_argument("--max-header-bytes", type=int, default=16_384, help="request line + headers size (400 beyond)")
    p.add_argument("--read-timeout", type=float, default=30.0, help="seconds for a whole request to arrive")
    p.add_argument("--http", choices=HTTP_PARSERS, default=HTTP_PARSERS[0],
                   help="HTTP/1.1 parser: httptools (C) or h11 (pure Python); both with the limits above")  # fmt: skip
    p.add_argument("--max-connections", type=int, default=1024, help="open connections before 503")
    p.add_argument(
        "--allowed-host", action="append", default=[], metavar="NAME",
        help="also answer requests whose Host header names NAME (repeatable; loopback names always pass on loopback)",
    )  # fmt: skip


def _add_batching_flags(p: argparse.ArgumentParser) -> None:
    """How concurrent requests are merged and run: group size, wait, lanes, one-thread groups."""
    p.add_argument(
        "--max-batch-tokens", type=int, default=None, help="tokens per merged group of requests (8192 on CPU)"
    )
    p.add_argument("--max-wait-ms", type=float, default=5.0, help="how long a request waits for others to join")
    p.add_argument("--lanes", type=int, default=1,
                   help="groups of requests on the CPU model at once, each on one thread (try one per core when many "
                        "clients send several texts each: docs/serving.md)")  # fmt: skip
    p.add_argument("--single-thread-tokens", type=int, default=0, metavar="N",
                   help="on the CPU, run groups merging several requests into under N tokens on one thread, "
                        "not cut across every core: less CPU per text, longer waits (default 0: off; "
                        "docs/serving.md)")  # fmt: skip


def _add_limit_flags(p: argparse.ArgumentParser) -> None:
    """What one request may hold (413 beyond each), the queue, and where images may come from."""
    p.add_argument("--max-request-tokens", type=int, default=131_072, help="tokens of one request (413 beyond)")
    p.add_argument("--max-inputs", type=int, default=2048, help="texts per request (413 beyond)")
    p.add_argument("--max-chars", type=int, default=200_000, help="characters per request (413 beyond)")
    p.add_argument("--max-body-bytes", type=int, default=2_000_000, help="request body size (413 beyond)")
    p.add_argument("--max-queue", type=int, default=16_384, help="texts waiting before 503")
    p.add_argument("--max-images", type=int, default=64, help="images and sounds per request (413 beyond)")
    p.add_argument("--max-image-bytes", type=int, default=8_000_000,
                   help="encoded bytes of one image or sound (413 beyond)")  # fmt: skip
    p.add_argument("--max-audio-seconds", type=float, default=120.0,
                   help="length of one sound, read from its header before decoding (413 beyond)")  # fmt: skip
    p.add_argument("--max-image-pixels", type=int, default=40_000_000,
                   help="width x height of one image, read before decoding (413 beyond)")  # fmt: skip
    p.add_argument("--allow-image-urls", action="store_true",
                   help="fetch http(s) image URLs that requests name (off: only data URLs; a client could otherwise "
                   "make the server fetch from its network)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Check flags, load model and index, warm up, then serve until SIGTERM / Ctrl-C (draining first)."""
    from sbert.serve import require_serve_extra

    require_serve_extra()
    import uvicorn

    from sbert.serve.server import keep_freed_memory, limit_malloc_arenas

    limit_malloc_arenas()  # before the model load and uvicorn start their threads
    keep_freed_memory()
    app, settings = build_app(args)
    uvicorn.run(app, **uvicorn_options(settings))
    return 0


def build_app(args: argparse.Namespace) -> tuple[Any, ServeSettings]:
    """The checked settings and the ASGI app with its models loaded: everything `run` does but serving."""
    from sbert.serve.server import build_server
    from sbert.serve.settings import ServeSettings

    settings = ServeSettings(
        model=args.model, backend=args.backend, index=args.index, host=args.host, port=args.port,
        api_key=_api_key(args), max_batch_tokens=args.max_batch_tokens, max_wait_ms=args.max_wait_ms,
        lanes=args.lanes, single_thread_tokens=args.single_thread_tokens, max_inputs=args.max_inputs,
        max_chars=args.max_chars, max_body_bytes=args.max_body_bytes,
        max_queue=args.max_queue, device=args.device, precision=args.precision,
        allowed_hosts=tuple(args.allowed_host), max_header_bytes=args.max_header_bytes,
        max_request_tokens=args.max_request_tokens, http=args.http,
        read_timeout=args.read_timeout, max_connections=args.max_connections, calibration=args.calibration,
        token_ids=args.token_ids, max_images=args.max_images, max_image_bytes=args.max_image_bytes,
        max_image_pixels=args.max_image_pixels, allow_image_urls=args.allow_image_urls,
        max_audio_seconds=args.max_audio_seconds,
    )  # fmt: skip
    settings.validate()
    if args.index is not None and not Path(args.index).is_dir():
        raise SbertError(f"--index {args.index}: no such folder")
    check_port_free(settings.host, settings.port)  # before the model loads and the URL is printed
    name = args.served_name or Path(str(args.model).rstrip("/")).name
    model, reranker, sparse, multivector = load_served(args)
    reranker_name = name if model is None and sparse is None and multivector is None else (
        args.reranker_name or Path(str(args.reranker).rstrip("/")).name if args.reranker else "reranker")  # fmt: skip
    app = build_server(settings, model, name, reranker, reranker_name, sparse, multivector)
    print(f"sbert serve: {name} on http://{settings.host}:{settings.port}", file=sys.stderr)
    return app, settings


def check_port_free(host: str, port: int) -> None:
    """A one-line error when `host:port` cannot be bound (in use, or not an address of this machine)."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as e:
        raise SbertError(f"--host {host}: cannot resolve it ({e})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a TIME_WAIT port is free
        try:
            probe.bind(address)
        except OSError as e:
            raise SbertError(f"--port {port}: cannot listen on {host}:{port} ({e.strerror}); "
                             "pick another --port or stop what holds it") from None  # fmt: skip


def load_served(args: argparse.Namespace) -> tuple[Any, Any, Any, Any]:
    """(dense, cross-encoder, sparse, multi-vector model) for the flags: --model may be any kind, each kind once."""
    from sbert.formats.model_dirs import resolve_model_dir
    from sbert.model_kind import kind_of

    root = resolve_model_dir(args.model)  # once: an alias or Hub id is not resolved again by each loader
    kind = kind_of(root)
    if kind in ("sparse", "m3") and args.sparse_model:
        raise SbertError(f"--model {args.model} is a {kind} model: drop --sparse-model or give a dense --model")
    if kind == "cross-encoder" and args.reranker:
        raise SbertError(f"--model {args.model} is a cross-encoder: drop --reranker or give a dense --model")
    if kind in ("sparse", "cross-encoder") and args.index is not None:
        raise SbertError(f"--index needs the dense or multi-vector model that built it; --model {args.model} is a "
                         f"{kind}")  # fmt: skip
    reranker_path = root if kind == "cross-encoder" else args.reranker
    reranker = sparse = multivector = None
    if reranker_path:
        from sbert.reranker.model import CrossEncoder

        reranker = CrossEncoder.load(reranker_path, device=args.device)
    if kind == "m3":  # its three views on one set of weights (m3/views.py)
        from sbert.m3.views import LexicalView, colbert_view, dense_view

        m3 = load_m3(root, args.device, getattr(args, "dtype", None), args.max_seq_length)
        return dense_view(m3), reranker, LexicalView(m3), colbert_view(m3)
    model = load_encoder(args, root) if kind in ("dense", "static") else None
    sparse_path = root if kind == "sparse" else args.sparse_model
    if sparse_path:
        from sbert.sparse import SparseEncoder

        sparse = SparseEncoder.load(sparse_path, device=args.device)
    if kind == "multi-vector":
        from sbert.multivector import MultiVectorEncoder

        multivector = MultiVectorEncoder.load(root, device=args.device)
    return model, reranker, sparse, multivector


def uvicorn_options(settings: ServeSettings) -> dict[str, Any]:
    """The uvicorn options for these serve settings: the hardened protocol, limits, a 30 s graceful drain."""
    from sbert.serve.protocol import guarded_protocol

    return dict(
        host=settings.host, port=settings.port, log_level="warning", timeout_graceful_shutdown=30,
        http=guarded_protocol(settings.read_timeout, settings.max_header_bytes, settings.http),
        h11_max_incomplete_event_size=settings.max_header_bytes,
        limit_concurrency=settings.max_connections,
    )  # fmt: skip


def _api_key(args: argparse.Namespace) -> str | None:
    """--api-key-file's first line, else --api-key / $SBERT_API_KEY, else None (no key)."""
    if args.api_key_file is None:
        return args.api_key or None
    try:
        lines = args.api_key_file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise SbertError(f"--api-key-file {args.api_key_file}: cannot read ({e})") from None
    if not lines or not lines[0].strip():
        raise SbertError(f"--api-key-file {args.api_key_file}: the first line is empty")
    return lines[0].strip()
