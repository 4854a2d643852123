"""`sbert crossval`: cross-validated fine-tuning on scored pairs (the paper's AFS protocol, Table 3).

k-fold (`--folds K`) or leave-one-topic-out (`--by-topic`); each fold fine-tunes a fresh copy of
--model with the regression objective (or `--cross-encoder`) and is scored by Spearman and Pearson
on its held-out pairs. OUTPUT/crossval.json is rewritten after each fold, and a rerun resumes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sbert.errors import SbertError
from sbert.formats.aliases import DEFAULT_MODEL


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("crossval", help="k-fold or cross-topic fine-tuning and scoring", description=__doc__)
    p.add_argument("--data", required=True, help="FORMAT:PATH of scored pairs, e.g. topic-pairs:AFS/ or stsb:FILE")
    p.add_argument("--output", "-o", type=Path, required=True, help="folder for crossval.json and crossval.md")
    p.add_argument("--model", "-m", default=DEFAULT_MODEL, help="the model every fold starts from")
    split = p.add_mutually_exclusive_group()
    split.add_argument("--folds", type=int, default=10, help="k of k-fold cross-validation (default 10)")
    split.add_argument("--by-topic", action="store_true", help="leave one topic out (needs topic-pairs data)")
    p.add_argument("--cross-encoder", action="store_true", help="fine-tune a cross-encoder instead (BERT baseline)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--seed", type=int, default=0, help="seed of the k-fold shuffle and of training")
    p.add_argument("--max-seq-length", type=int, help="token limit per sentence (default: the model's own)")
    p.add_argument("--max-folds", type=int, help="stop after this many folds (a rerun with a larger cap goes on)")
    p.add_argument("--topic-groups", type=int, help="with --by-topic: hold out K groups of topics instead of each one")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read the data, run the missing folds, print and write the per-fold table."""
    from sbert.data import load_dataset
    from sbert.reproduce.crossval import CrossValSettings, cross_validate

    if args.epochs < 1 or args.batch_size < 1 or args.lr <= 0:
        raise SbertError("--epochs and --batch-size must be >= 1 and --lr > 0")
    if args.max_folds is not None and args.max_folds < 1:
        raise SbertError(f"--max-folds {args.max_folds}: must be >= 1")
    if args.topic_groups is not None and not args.by_topic:
        raise SbertError("--topic-groups needs --by-topic")
    data = load_dataset(args.data)
    if data.kind != "pair-score":
        raise SbertError(f"--data {args.data}: cross-validation needs scored pairs, not {data.kind} data")
    # --by-topic: as many folds as held-out groups (the number of topics unless --topic-groups)
    folds = (args.topic_groups or len(set(data.groups))) if args.by_topic else args.folds
    settings = CrossValSettings(
        model=args.model, data=args.data, scheme="topic" if args.by_topic else "kfold", folds=folds,
        seed=args.seed, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, cross_encoder=args.cross_encoder,
        max_seq_length=args.max_seq_length, topic_groups=args.topic_groups,
    )  # fmt: skip
    args.output.mkdir(parents=True, exist_ok=True)

    def progress(record: dict, name: str, seconds_left: float) -> None:
        fold = record["folds"][name]
        print(f"{name}: Spearman {fold['spearman']:.2f} (before training {fold['spearman_before']:.2f}), "
              f"{fold['seconds']} s; {len(record['folds'])}/{settings.folds} folds done, "
              f"about {seconds_left / 60:.1f} min left", file=sys.stderr, flush=True)  # fmt: skip
        write_table(args.output, record)

    print(f"crossval: {settings.folds} folds of {args.data}; one line per fold follows", file=sys.stderr, flush=True)
    record = cross_validate(settings, data, args.output / "crossval.json", args.output / "work", args.max_folds,
                            progress)  # fmt: skip
    print(write_table(args.output, record))
    print(f"wrote {args.output / 'crossval.json'} and crossval.md", file=sys.stderr)
    return 0


def write_table(output: Path, record: dict) -> str:
    """crossval.md from the folds done so far (rewritten after each fold); returns the text."""
    from sbert.formats.layout import atomic_file

    table = render(record)
    with atomic_file(output / "crossval.md") as f:
        f.write(table.encode("utf-8"))
    return table


def render(record: dict) -> str:
    """Markdown: one row per fold, then the mean ± std."""
    s, total = record["settings"], record["summary"]
    kind = "cross-encoder" if s["cross_encoder"] else "bi-encoder (regression objective)"
    scheme = "leave one topic out" if s["scheme"] == "topic" else f"{s['folds']}-fold, seed {s['seed']}"
    lines = [f"# Cross-validated fine-tuning: `{s['data']}`", "",
             f"`{s['model']}` as a {kind}; {scheme}; {s['epochs']} epoch(s), batch {s['batch_size']}, lr {s['lr']}.",
             "", "| Fold | Train | Test | Spearman before training | Spearman | Pearson | Seconds |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, f in record["folds"].items():
        before = f"{f['spearman_before']:.2f}" if "spearman_before" in f else "-"
        lines.append(f"| {name} | {f['train']} | {f['test']} | {before} | {f['spearman']:.2f} | {f['pearson']:.2f} "
                     f"| {f['seconds']} |")  # fmt: skip
    before_mean = f"{total['spearman_before']:.2f}" if "spearman_before" in total else "-"
    lines.append(f"| **mean of {total['folds']} of {s['folds']} folds** | | | {before_mean} "
                 f"| {total['spearman']:.2f} ± {total['spearman_std']:.2f} "
                 f"| {total['pearson']:.2f} ± {total['pearson_std']:.2f} | |")  # fmt: skip
    return "\n".join(lines) + "\n"
