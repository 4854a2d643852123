"""`sbert encode`: one sentence per line in; an (n, dim) float32 .npy out, or ordered shards in a folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sbert.cli.common import add_backend_args, add_model_args, check_output, load_model, save_npy, stream_lines


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("encode", help="embed a text file, one sentence per line", description=__doc__)
    p.add_argument("--input", "-i", required=True, help="UTF-8 text file, one sentence per line ('-' = stdin)")
    p.add_argument("--output", "-o", required=True, help="output .npy path, or a folder (ending in /) for shards")
    p.add_argument("--batch-size", type=int, default=None, help="rows per batch (default: by --batch-tokens)")
    p.add_argument("--normalize", action="store_true", help="L2-normalise the vectors")
    p.add_argument("--long-text", choices=("truncate", "chunk"), default="truncate", help="inputs beyond the limit")
    p.add_argument("--shard-size", type=int, default=100_000, help="rows per shard when writing a folder")
    p.add_argument("--processes", type=int, default=1, help="worker processes when writing a folder")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None, help="progress bar")
    add_backend_args(p)
    add_model_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read, encode, write (streaming to shards when the output is a folder)."""
    for flag in ("batch_size", "batch_tokens", "shard_size", "processes"):
        value = getattr(args, flag)
        if value is not None and value <= 0:
            raise ValueError(f"--{flag.replace('_', '-')} must be positive, got {value}")
    if args.output.endswith(("/", "\\")) or Path(args.output).is_dir():
        return _to_folder(args)
    check_output(args.output)
    sentences = list(stream_lines(args.input))
    model = load_model(args)
    vectors = model.encode(
        sentences,
        batch_size=args.batch_size,
        batch_tokens=args.batch_tokens,
        normalize=args.normalize,
        backend=args.backend,
        long_text=args.long_text,
        show_progress=args.progress,
    )
    save_npy(args.output, vectors)
    print(f"wrote {vectors.shape[0]} x {vectors.shape[1]} embeddings to {args.output}", file=sys.stderr)
    return 0


def _to_folder(args: argparse.Namespace) -> int:
    from sbert.streaming import encode_to_disk

    total = None if args.input == "-" else _count_lines(Path(args.input))
    model = load_model(args)
    rows = encode_to_disk(
        model,
        stream_lines(args.input),
        args.output,
        args.shard_size,
        normalize=args.normalize,
        backend=args.backend,
        batch_tokens=args.batch_tokens,
        total=total,
        processes=args.processes,
        show_progress=args.progress is not False,
    )
    print(f"wrote {rows} x {model.embedding_dimension} embeddings as shards in {args.output}", file=sys.stderr)
    return 0


def _count_lines(path: Path) -> int | None:
    """Lines in a file, for the progress bar's total and ETA (None when it cannot be read)."""
    try:
        with path.open("rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except OSError:
        return None
