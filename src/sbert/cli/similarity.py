"""`sbert similarity`: cosine similarity of two sentences."""

from __future__ import annotations

import argparse

from sbert.cli.common import add_model_args, load_encoder
from sbert.search import cos_sim


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("similarity", help="cosine similarity of two sentences", description=__doc__)
    p.add_argument("a", help="first sentence")
    p.add_argument("b", help="second sentence")
    add_model_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the cosine with four decimals."""
    model = load_encoder(args)
    u, v = model.encode([args.a, args.b])
    print(f"{float(cos_sim(u, v)[0, 0]):.4f}")
    return 0
