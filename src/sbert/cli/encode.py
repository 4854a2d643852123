"""`sbert encode`: one sentence per line in, an (n, dim) float32 .npy out."""

from __future__ import annotations

import argparse
import sys

from sbert.cli.common import add_model_args, check_output, load_model, read_lines, save_npy


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("encode", help="embed a text file, one sentence per line", description=__doc__)
    p.add_argument("--input", "-i", required=True, help="UTF-8 text file, one sentence per line ('-' = stdin)")
    p.add_argument("--output", "-o", required=True, help="output .npy path (row i = line i)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--normalize", action="store_true", help="L2-normalise the vectors")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None, help="progress bar")
    add_model_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read, encode, write."""
    if args.batch_size <= 0:
        raise ValueError(f"--batch-size must be positive, got {args.batch_size}")
    check_output(args.output)
    sentences = read_lines(args.input)
    model = load_model(args)
    vectors = model.encode(sentences, batch_size=args.batch_size, normalize=args.normalize, show_progress=args.progress)
    save_npy(args.output, vectors)
    print(f"wrote {vectors.shape[0]} x {vectors.shape[1]} embeddings to {args.output}", file=sys.stderr)
    return 0
