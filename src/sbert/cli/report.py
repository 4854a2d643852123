"""`sbert report RESULTS.json ... --output DIR`: several `sbert eval` runs in one table and one chart.

`sbert report --train-log MODEL/train_log.jsonl --output DIR`: a training run's dev curves
(dev_curves.csv and dev_curves.png).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sbert.errors import SbertError


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("report", help="merge eval results into one table and chart", description=__doc__)
    p.add_argument("results", nargs="*", type=Path, help="results.json files written by `sbert eval`")
    p.add_argument("--train-log", type=Path, help="a training run's train_log.jsonl: plot its dev curves")
    p.add_argument("--output", "-o", type=Path, required=True, help="folder for report.md and report.png")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read every results file (each checked), write the merged table and chart; or a run's dev curves."""
    if args.train_log is not None:
        return _curves(args.train_log, args.output)
    if not args.results:
        raise SbertError("give results.json files, or --train-log")
    from sbert.evaluation.plots import bars
    from sbert.evaluation.report import read_results, render
    from sbert.formats.layout import atomic_file

    runs = [read_results(path) for path in args.results]
    args.output.mkdir(parents=True, exist_ok=True)
    table = render(runs)
    with atomic_file(args.output / "report.md") as f:
        f.write(table.encode("utf-8"))
    bars(runs, args.output / "report.png")
    print(table)
    print(f"wrote {args.output / 'report.md'} and report.png", file=sys.stderr)
    return 0


def _curves(log: Path, output: Path) -> int:
    from sbert.evaluation.plots import curves
    from sbert.training.runlog import dev_curves, write_curves_csv

    if not log.is_file():
        raise SbertError(f"{log}: no such file")
    series = dev_curves(log)
    if not series:
        raise SbertError(f"{log}: no eval records (train with --dev to get dev curves)")
    output.mkdir(parents=True, exist_ok=True)
    write_curves_csv(series, output / "dev_curves.csv")
    curves(series, output / "dev_curves.png", log.parent.name)
    print(f"wrote {output / 'dev_curves.csv'} and dev_curves.png ({len(series)} curves)", file=sys.stderr)
    return 0
