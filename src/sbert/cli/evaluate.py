"""`sbert eval`: score a model on STS pairs (Spearman / Pearson) or triplets (accuracy)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sbert.cli.common import add_model_args, load_model
from sbert.errors import SbertError


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("eval", help="score a model on STS / triplet / NLI test sets", description=__doc__)
    p.add_argument(
        "--task",
        "-t",
        action="append",
        required=True,
        help="FORMAT:PATH, e.g. stsb:sts-test.csv, sts:STS12-dir, sick:SICK.txt, nli-triplets:DIR:test",
    )
    p.add_argument("--output", "-o", type=Path, help="folder for results.json and results.md")
    p.add_argument("--batch-size", type=int, default=64)
    add_model_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read every task first (bad input fails before encoding), then score each."""
    from sbert.data import load_dataset
    from sbert.evaluation import evaluate

    if args.output is not None and args.output.exists() and not args.output.is_dir():
        raise SbertError(f"{args.output}: exists and is not a folder")
    tasks = {spec: load_dataset(spec) for spec in args.task}
    model = load_model(args)
    results: dict[str, dict[str, float]] = {}
    for spec, dataset in tasks.items():
        metric, scores = evaluate(model, dataset, args.batch_size)
        results[spec] = {"headline": scores[metric], "size": len(dataset), **scores}
        print(f"{spec}: {metric} {scores[metric]:.2f}")
    if args.output is not None:
        write_results(args.output, args.model, results)
        print(f"wrote {args.output / 'results.json'}", file=sys.stderr)
    return 0


def write_results(folder: Path, model: str, results: dict[str, dict[str, float]]) -> None:
    """results.json (every score) and results.md (one headline row per task)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps({"model": model, "tasks": results}, indent=2) + "\n")
    rows = ["| task | examples | score |", "|---|---|---|"]
    rows += [f"| `{spec}` | {int(r['size'])} | {r['headline']:.2f} |" for spec, r in results.items()]
    (folder / "results.md").write_text(f"# {model}\n\n" + "\n".join(rows) + "\n")
