"""`sbert encode`: one sentence per line in; an (n, dim) float32 .npy out, or ordered shards in a folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sbert.cli.common import (
    add_backend_args,
    add_dtype_arg,
    add_model_args,
    check_output,
    load_encoder,
    save_npy,
    stream_lines,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("encode", help="embed a text file, one sentence per line", description=__doc__)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", "-i", help="UTF-8 text file, one sentence per line ('-' = stdin)")
    source.add_argument(
        "--ray", metavar="INPUT", help="encode on Ray (RAY_ADDRESS or a local instance): text, JSONL or Parquet"
    )
    p.add_argument("--output", "-o", required=True, help="output .npy path, or a folder (ending in /) for shards")
    p.add_argument("--batch-size", type=int, default=None, help="rows per batch (default: by --batch-tokens)")
    p.add_argument("--normalize", action="store_true", help="L2-normalise the vectors")
    p.add_argument("--long-text", choices=("truncate", "chunk"), default="truncate", help="inputs beyond the limit")
    p.add_argument("--shard-size", type=int, default=100_000, help="rows per shard when writing a folder")
    p.add_argument("--processes", type=int, default=1, help="worker processes when writing a folder")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None, help="progress bar")
    p.add_argument("--text-column", default="text", help="with --ray: the column holding the texts")
    p.add_argument("--id-column", default="id", help="with --ray: the column holding row ids")
    p.add_argument("--actors", type=int, default=2, help="with --ray: model replicas")
    p.add_argument("--cpus-per-actor", type=float, default=1.0, help="with --ray: CPUs each replica takes")
    p.add_argument("--gpus-per-actor", type=float, default=0.0, help="with --ray: GPUs each replica takes")
    p.add_argument("--devices", help="several devices, one worker process each: cuda:0,cuda:1 (or cpu,cpu)")
    add_backend_args(p)
    add_model_args(p)
    add_dtype_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read, encode, write (streaming to shards when the output is a folder)."""
    if args.gpus_per_actor < 0:
        raise ValueError(f"--gpus-per-actor must be >= 0, got {args.gpus_per_actor}")
    for flag in ("batch_size", "batch_tokens", "shard_size", "processes", "actors", "cpus_per_actor"):
        value = getattr(args, flag)
        if value is not None and value <= 0:
            raise ValueError(f"--{flag.replace('_', '-')} must be positive, got {value}")
    if args.ray is not None:
        return _on_ray(args)
    if args.output.endswith(("/", "\\")) or Path(args.output).is_dir():
        return _to_folder(args)
    check_output(args.output)
    sentences = list(stream_lines(args.input))
    model = load_encoder(args)
    vectors = model.encode(
        sentences,
        batch_size=args.batch_size,
        batch_tokens=args.batch_tokens,
        normalize=args.normalize,
        backend=args.backend,
        long_text=args.long_text,
        show_progress=args.progress,
        precision=args.precision,
        devices=args.devices.split(",") if args.devices else None,
    )
    save_npy(args.output, vectors)
    print(f"wrote {vectors.shape[0]} x {vectors.shape[1]} embeddings to {args.output}", file=sys.stderr)
    return 0


def _to_folder(args: argparse.Namespace) -> int:
    from sbert.scale.streaming import encode_to_disk

    total = None if args.input == "-" else _count_lines(Path(args.input))
    model = load_encoder(args)
    rows = encode_to_disk(
        model,
        stream_lines(args.input),
        args.output,
        args.shard_size,
        normalize=args.normalize,
        backend=args.backend,
        batch_tokens=args.batch_tokens,
        precision=args.precision,
        total=total,
        processes=args.processes,
        show_progress=args.progress is not False,
    )
    print(f"wrote {rows} x {model.embedding_dimension} embeddings as shards in {args.output}", file=sys.stderr)
    return 0


def _on_ray(args: argparse.Namespace) -> int:
    import tempfile

    from sbert.distributed import require_ray

    require_ray()
    import ray

    from sbert.distributed.ray_encode import encode_dataset, read_input, write_output

    if Path(args.output).exists():
        raise ValueError(f"{args.output}: already exists; choose a new output folder")
    # Joins RAY_ADDRESS when set, else starts a local instance (or reuses this process's own).
    ray.init(log_to_driver=False, ignore_reinit_error=True)
    with tempfile.TemporaryDirectory(prefix="sbert-ray-") as staging:
        ds = read_input(args.ray, args.text_column, args.id_column, Path(staging))
        options = {"backend": args.backend, "batch_tokens": args.batch_tokens, "normalize": args.normalize,
                   "precision": args.precision}  # fmt: skip
        encoded = encode_dataset(ds, args.model, text_column=args.text_column, actors=args.actors,
                                 cpus_per_actor=args.cpus_per_actor, gpus_per_actor=args.gpus_per_actor,
                                 device=args.device, dtype=args.dtype, **options)  # fmt: skip
        rows = write_output(encoded, args.output)
    print(f"wrote {rows} embeddings as Parquet in {args.output}", file=sys.stderr)
    return 0


def _count_lines(path: Path) -> int | None:
    """Lines in a file, for the progress bar's total and ETA (None when it cannot be read)."""
    try:
        with path.open("rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except OSError:
        return None
