"""`sbert mine-negatives`: hard negatives for (anchor, positive) pairs, as triplets: jsonl for training."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sbert.cli.common import add_model_args, load_model


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("mine-negatives", help="mine hard negatives for (anchor, positive) pairs", description=__doc__)
    p.add_argument("--pairs", required=True, help="pairs:FILE, triplets:FILE or nli:PATH (entailment pairs)")
    p.add_argument("--corpus", help="text:FILE to draw negatives from (default: the positives)")
    p.add_argument("--output", "-o", required=True, type=Path, help="jsonl for triplets:FILE (resumes if cut)")
    p.add_argument("--rank-min", type=int, default=0, help="first rank that may be a negative (0: the top hit)")
    p.add_argument("--rank-max", type=int, default=50, help="ranks at or past this are not considered")
    p.add_argument("--margin", type=float, default=0.05, help="drop candidates above positive score - margin")
    p.add_argument("--max-score", type=float, default=None, help="drop candidates scoring above this")
    p.add_argument("--negatives", type=int, default=1, help="negatives per pair")
    p.add_argument("--n-tuple", action="store_true", help="one row per pair with negative_1..k (else one per negative)")
    p.add_argument(
        "--cross-encoder", help="rescore candidates with this cross-encoder folder (the guard uses its scores)"
    )
    p.add_argument("--block", type=int, default=4096, help="pairs per resumable block")
    add_model_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read the pairs (and corpus), mine block by block into the output, report what was written."""
    from sbert.data import load_dataset
    from sbert.search.negatives import MiningSettings, anchor_positive_pairs, mine_to_file

    pairs = anchor_positive_pairs(load_dataset(args.pairs))
    corpus = [t[0] for t in load_dataset(args.corpus).texts] if args.corpus else None
    settings = MiningSettings(args.rank_min, args.rank_max, args.margin, args.max_score, args.negatives, args.block)
    rescore = None
    if args.cross_encoder:
        from sbert.reranker.model import CrossEncoder

        rescore = CrossEncoder.load(args.cross_encoder, device=args.device).predict
    counts = mine_to_file(load_model(args), pairs, corpus, args.output, settings, rescore, args.n_tuple)
    short = f"; {counts['short']} with fewer than {args.negatives} left out of the n-tuples" if args.n_tuple else ""
    guard = f"{counts['without_negative']} pairs without a negative past the guard{short}"
    print(f"{args.output}: {counts['rows']} rows from {counts['pairs']} pairs ({guard})", file=sys.stderr)
    return 0
