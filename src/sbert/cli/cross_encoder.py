"""`sbert train-cross-encoder`: fine-tune the BERT cross-encoder baseline on scored pairs.

Both sentences go through the transformer together and a regression head on the first token
scores the pair. Score it with `sbert eval --model cross:OUTPUT --task stsb:sts-test.csv`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sbert.aliases import DEFAULT_MODEL
from sbert.errors import SbertError


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("train-cross-encoder", help="train the cross-encoder baseline", description=__doc__)
    p.add_argument("--train", required=True, help="FORMAT:PATH of scored pairs (stsb:, sick:, sts:, topic-pairs:)")
    p.add_argument("--output", "-o", type=Path, required=True, help="folder for the trained cross-encoder")
    p.add_argument("--model", "-m", default=DEFAULT_MODEL, help="the transformer to start from")
    p.add_argument("--dev", help="FORMAT:PATH of scored pairs to report Spearman on after training")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-seq-length", type=int, help="tokens of the joined pair (default: the model's limit)")
    p.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda when available)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read the data first (bad input fails before loading the model), train, save atomically."""
    from sbert.baselines.cross_encoder import CrossEncoder
    from sbert.data import load_dataset
    from sbert.device import resolve_device
    from sbert.evaluation.sts import cross_scores
    from sbert.reproduce.cross_encoder_fit import fit_cross_encoder

    if args.epochs < 1 or args.batch_size < 1 or args.lr <= 0:
        raise SbertError("--epochs and --batch-size must be >= 1 and --lr > 0")
    if args.output.exists():
        raise SbertError(f"{args.output}: already exists; choose a new --output")
    train = load_dataset(args.train)
    dev = load_dataset(args.dev) if args.dev else None
    for data in filter(None, (train, dev)):
        if data.kind != "pair-score":
            raise SbertError(f"{data.name}: a cross-encoder trains on scored pairs, not {data.kind} data")
    device = str(resolve_device(args.device))
    model = CrossEncoder.from_transformer(args.model, max_seq_length=args.max_seq_length).to(device)
    seconds = fit_cross_encoder(model, train, args.epochs, args.batch_size, args.lr, args.seed)
    model.save(args.output)
    print(f"trained on {len(train)} pairs in {seconds:.0f} s; saved {args.output}", file=sys.stderr)
    if dev is not None:
        scores = cross_scores(model, dev)[0]
        print(f"{dev.name}: spearman {scores['spearman']:.2f} pearson {scores['pearson']:.2f}")
    return 0
