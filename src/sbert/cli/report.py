"""`sbert report RESULTS.json ... --output DIR`: several `sbert eval` runs in one table and one chart."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("report", help="merge eval results into one table and chart", description=__doc__)
    p.add_argument("results", nargs="+", type=Path, help="results.json files written by `sbert eval`")
    p.add_argument("--output", "-o", type=Path, required=True, help="folder for report.md and report.png")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read every results file (each checked), write the merged table and chart."""
    from sbert.evaluation.plots import bars
    from sbert.evaluation.report import read_results, render
    from sbert.layout import atomic_file

    runs = [read_results(path) for path in args.results]
    args.output.mkdir(parents=True, exist_ok=True)
    table = render(runs)
    with atomic_file(args.output / "report.md") as f:
        f.write(table.encode("utf-8"))
    bars(runs, args.output / "report.png")
    print(table)
    print(f"wrote {args.output / 'report.md'} and report.png", file=sys.stderr)
    return 0
