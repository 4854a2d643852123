"""`sbert distill --static`: turn a sentence encoder into a static-embedding model (no transformer to encode)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sbert.cli.common import add_model_args, load_model, read_lines
from sbert.errors import SbertError


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("distill", help="distil a static-embedding model from an encoder", description=__doc__)
    p.add_argument("--static", action="store_true", required=True, help="distil a static token-vector model")
    p.add_argument("--output", "-o", required=True, help="folder to write (sentence-transformers layout)")
    p.add_argument("--corpus", help="UTF-8 text, one sentence per line: SIF counts and the fit to the teacher")
    p.add_argument("--dim", type=int, default=256, help="vector size after PCA (default 256)")
    p.add_argument("--epochs", type=int, default=3, help="passes of the row fit over the corpus (default 3)")
    p.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate of the fit (default 1e-3)")
    p.add_argument("--limit", type=int, default=None, help="use the first N distinct corpus sentences")
    p.add_argument("--no-progress", action="store_true", help="no progress bars (the steps are still logged)")
    add_model_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Check every flag and the corpus before the teacher loads; write the model atomically."""
    from sbert.static.distill import MIN_CORPUS, distill_static

    for flag in ("dim", "limit"):
        value = getattr(args, flag)
        if value is not None and value <= 0:
            raise ValueError(f"--{flag} must be positive, got {value}")
    if args.epochs < 0 or not args.lr > 0:
        raise ValueError(f"--epochs must be >= 0 and --lr > 0, got {args.epochs} and {args.lr}")
    if not Path(args.output).parent.resolve().is_dir():
        raise SbertError(f"--output {args.output}: folder {Path(args.output).parent} does not exist")
    corpus = None
    if args.corpus is not None:
        distinct = dict.fromkeys(line.strip() for line in read_lines(args.corpus))
        corpus = [line for line in distinct if line][: args.limit]
        if len(corpus) < MIN_CORPUS:
            raise SbertError(f"--corpus {args.corpus}: {len(corpus)} distinct sentences; need at least {MIN_CORPUS}")
    start = time.perf_counter()
    teacher = load_model(args)
    static = distill_static(teacher, corpus, dim=args.dim, epochs=args.epochs, lr=args.lr, teacher_name=args.model,
                            show_progress=not args.no_progress)  # fmt: skip
    static.save(args.output)
    print(f"wrote a {static.embedding_dimension}-d static model of {args.model} to {args.output} "
          f"in {time.perf_counter() - start:.0f} s", file=sys.stderr)  # fmt: skip
    return 0
