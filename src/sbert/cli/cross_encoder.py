"""`sbert train-cross-encoder`: fine-tune a CrossEncoder on scored or labelled pairs.

Both texts go through the transformer together and its classification head scores the pair.
Scored pairs (stsb:, sick:, sts:, topic-pairs:) train one score with binary cross-entropy
(--loss mse: squared error of the sigmoid); labelled pairs (nli:) train one score with
--positive LABEL (a reranker: entailment against the rest), or every label without it; triplets
(triplets:, nli-triplets:, `sbert mine-negatives` output) train (anchor, positive) against
(anchor, negative). --random-negatives K adds K pairs of each positive's first text with random
other second texts, scored 0 (a reranker then also sees unrelated documents). The
output folder is sentence-transformers' CrossEncoder layout. Score it with
`sbert eval --model cross:OUTPUT --task stsb:sts-test.csv` or `--task ir:DIR --reranker OUTPUT`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sbert.errors import SbertError
from sbert.formats.aliases import DEFAULT_MODEL

if TYPE_CHECKING:
    from sbert.data.common import Dataset
    from sbert.reranker.model import CrossEncoder


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("train-cross-encoder", help="train a cross-encoder (reranker)", description=__doc__)
    p.add_argument(
        "--train", required=True, help="FORMAT:PATH: scored (stsb:, sts:) or labelled (nli:) pairs, triplets"
    )
    p.add_argument("--output", "-o", type=Path, required=True, help="folder for the trained cross-encoder")
    p.add_argument("--model", "-m", default=DEFAULT_MODEL, help="the encoder (or cross-encoder) to start from")
    p.add_argument("--dev", help="FORMAT:PATH of scored pairs to report Spearman on after training")
    p.add_argument("--positive", help="labelled pairs: this label scores 1, the others 0 (e.g. entailment)")
    p.add_argument("--loss", choices=("bce", "mse"), default="bce", help="for one-score heads (default bce)")
    p.add_argument("--random-negatives", type=int, default=0, metavar="K", help="random negatives per positive pair")
    p.add_argument("--limit", type=int, help="train on the first N pairs only")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-seq-length", type=int, help="tokens of the joined pair (default: the model's limit)")
    p.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda when available)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read the data first (bad input fails before loading the model), train, save atomically."""
    from sbert.data import load_dataset
    from sbert.evaluation.sts import cross_scores
    from sbert.training.cross_encoder import CrossFitSettings, fit_cross_encoder, training_targets

    if args.epochs < 1 or args.batch_size < 1 or args.lr <= 0 or (args.limit is not None and args.limit < 1):
        raise SbertError("--epochs, --batch-size and --limit must be >= 1 and --lr > 0")
    if args.random_negatives < 0:
        raise SbertError(f"--random-negatives must be >= 0, got {args.random_negatives}")
    if args.output.exists():
        raise SbertError(f"{args.output}: already exists; choose a new --output")
    train = load_dataset(args.train)
    if args.limit is not None:
        train = train.subset(list(range(min(args.limit, len(train)))), train.name)
    dev = load_dataset(args.dev) if args.dev else None
    if dev is not None and dev.kind != "pair-score":
        raise SbertError(f"--dev {args.dev}: Spearman needs scored pairs, not {dev.kind} data")
    settings = CrossFitSettings(args.epochs, args.batch_size, args.lr, args.seed, args.loss, args.positive,
                                random_negatives=args.random_negatives)  # fmt: skip
    source = f"; {train.source}" if train.source else ""  # a table's column roles, as `sbert train` prints them
    print(f"{train.name}: {len(train)} {train.kind} examples{source}", file=sys.stderr)
    model = _start(args, train)
    training_targets(model, train, settings)  # data and head agree, before any training
    seconds = fit_cross_encoder(model, train, settings)
    model.save(args.output)
    print(f"trained on {len(train)} {train.kind} examples in {seconds:.0f} s; saved {args.output}", file=sys.stderr)
    if dev is not None:
        scores = cross_scores(model, dev)[0]
        print(f"{dev.name}: spearman {scores['spearman']:.2f} pearson {scores['pearson']:.2f}")
    return 0


def _start(args: argparse.Namespace, train: Dataset) -> CrossEncoder:
    """A saved cross-encoder to continue, or a fresh head on an encoder (one output, or one per label)."""
    from sbert.device import resolve_device
    from sbert.errors import ModelFormatError
    from sbert.reranker.model import CrossEncoder

    device = str(resolve_device(args.device))
    try:
        return CrossEncoder.load(args.model, device=device, max_seq_length=args.max_seq_length)
    except ModelFormatError as e:
        if "not a cross-encoder" not in str(e):
            raise
    num_labels = len(train.label_names) if train.kind == "pair-class" and args.positive is None else 1
    return CrossEncoder.new(args.model, num_labels, args.max_seq_length, device=device)
