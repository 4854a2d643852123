"""`sbert reproduce TABLE`: run the recipe behind a paper table and write it beside the paper's numbers."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sbert.aliases import DEFAULT_MODEL
from sbert.errors import SbertError

TABLES = ("ablation",)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("reproduce", help="re-run a paper table (ablation: SBERT Table 6)", description=__doc__)
    p.add_argument("table", choices=TABLES)
    p.add_argument("--output", "-o", type=Path, required=True, help="folder for TABLE.md and TABLE.json")
    p.add_argument("--model", "-m", default=DEFAULT_MODEL, help="starting model (its transformer gets fresh heads)")
    p.add_argument("--data", type=Path, default=Path("../shared/data"), help="folder with snli/ and stsbenchmark/")
    p.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    p.add_argument("--nli-pairs", type=int, default=2000, help="SNLI pairs per classification run")
    p.add_argument("--sts-pairs", type=int, default=2000, help="STS benchmark pairs per regression run")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Check the inputs, run what is missing from OUTPUT/TABLE.json, write the table."""
    from sbert.data import load_dataset
    from sbert.layout import atomic_file
    from sbert.reproduce.ablation import AblationSettings, ablation_runs, render
    from sbert.reproduce.runs import Results, run_all

    try:
        seeds = tuple(int(s) for s in args.seeds.split(",") if s.strip())
    except ValueError:
        raise SbertError(f"--seeds {args.seeds!r}: expected comma-separated integers") from None
    if not seeds or args.nli_pairs < 1 or args.sts_pairs < 1:
        raise SbertError("--seeds, --nli-pairs and --sts-pairs need at least one seed and one pair")
    settings = AblationSettings(args.model, args.data, seeds, args.nli_pairs, args.sts_pairs)
    dev = load_dataset(f"stsb:{args.data / 'stsbenchmark' / 'sts-dev.csv'}")
    for spec in (f"nli:{args.data / 'snli'}", f"stsb:{args.data / 'stsbenchmark' / 'sts-train.csv'}"):
        load_dataset(spec)  # a missing or broken file fails now, not after an hour of training
    args.output.mkdir(parents=True, exist_ok=True)
    results = Results(args.output / f"{args.table}.json", settings.as_dict())
    started = time.monotonic()
    run_all(ablation_runs(settings), results, args.output / "work", dev)
    table = render(results, settings)
    with atomic_file(args.output / f"{args.table}.md") as f:
        f.write(table.encode("utf-8"))
    print(table)
    print(f"wall time {time.monotonic() - started:.0f} s; table in {args.output / args.table}.md", file=sys.stderr)
    return 0
