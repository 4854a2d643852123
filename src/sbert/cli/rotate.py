"""`sbert rotate`: append a PCA rotation fitted on your texts, so truncated vectors keep more (full size unchanged)."""

from __future__ import annotations

import argparse
import sys

from sbert.errors import SbertError


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "rotate", help="append a PCA rotation so leading dimensions carry the most (better truncation)",
        description=__doc__,
    )  # fmt: skip
    p.add_argument("--model", "-m", required=True, help="the model to rotate (alias or folder)")
    p.add_argument("--data", action="append", required=True, metavar="FORMAT:PATH",
                   help="texts to fit on, in any format `sbert train` reads (all columns; repeatable)")  # fmt: skip
    p.add_argument("--output", "-o", required=True, help="folder for the rotated model (written atomically)")
    p.add_argument("--max-texts", type=int, default=50_000, help="fit on at most this many distinct texts (50000)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--device")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read the texts, fit the rotation, save; print how much energy the leading dimensions hold now."""
    from sbert.data import load_dataset
    from sbert.dense.model import SentenceEncoder
    from sbert.training.rotation import rotate

    if args.max_texts <= 0:
        raise SbertError(f"--max-texts must be positive, got {args.max_texts}")
    texts = list(dict.fromkeys(t for spec in args.data for example in load_dataset(spec).texts for t in example))
    model = SentenceEncoder.load(args.model, device=args.device)
    rotated, report = rotate(model, texts[: args.max_texts], args.batch_size)
    rotated.save(args.output)
    shares = ", ".join(f"{k}: {100 * report.energy_before[k]:.1f}% -> {100 * report.energy_after[k]:.1f}%"
                       for k in report.energy_after)  # fmt: skip
    print(f"rotation fitted on {report.texts} texts; energy in the leading dimensions {shares}; wrote {args.output}",
          file=sys.stderr)  # fmt: skip
    return 0
