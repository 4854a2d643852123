"""`sbert similarity`: the model's similarity of two sentences (cosine unless the model saved another)."""

from __future__ import annotations

import argparse

from sbert.cli.common import add_dtype_arg, add_model_args, load_encoder
from sbert.similarity import pairwise_similarity, similarity_of


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("similarity", help="similarity of two sentences (the model's function)", description=__doc__)
    p.add_argument("a", help="first sentence")
    p.add_argument("b", help="second sentence")
    add_model_args(p)
    add_dtype_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the similarity with four decimals."""
    model = load_encoder(args)
    u, v = model.encode([args.a, args.b])
    print(f"{float(pairwise_similarity(u, v, similarity_of(model))[0]):.4f}")
    return 0
