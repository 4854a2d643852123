"""`sbert reproduce TABLE`: run the recipe behind a paper table and write it beside the paper's numbers.

table1: STS without STS training; table2: supervised STSb (bi- vs cross-encoder); table5: SentEval
transfer; table6 (or ablation): pooling and concatenation ablation; table7: encoding speed.
OUTPUT/TABLE.json is rewritten after every cell, so a rerun resumes; OUTPUT/TABLE.md is the table.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sbert.errors import SbertError
from sbert.formats.aliases import DEFAULT_MODEL

if TYPE_CHECKING:
    from sbert.reproduce.runs import Results

Runner = Callable[[argparse.Namespace, tuple[int, ...], int, int], str]  # (args, seeds, NLI pairs, STSb pairs)

TABLES = ("table1", "table2", "table5", "table6", "table7", "ablation")
# Per-table defaults where the flag is not given: (NLI pairs, STSb pairs).
DEFAULT_PAIRS = {"table1": (10_000, 0), "table5": (10_000, 0), "table2": (2000, 5749), "table6": (2000, 2000)}


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("reproduce", help="re-run a paper table (1, 2, 5, 6, 7)", description=__doc__)
    p.add_argument("table", choices=TABLES)
    p.add_argument("--output", "-o", type=Path, required=True, help="folder for TABLE.md and TABLE.json")
    p.add_argument("--model", "-m", default=DEFAULT_MODEL, help="starting model (the paper: BERT-base)")
    p.add_argument("--data", type=Path, default=None,
                   help="folder with snli/, stsbenchmark/, sst2/ (default: $SBERT_DATA or ../shared/data)")  # fmt: skip
    p.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (tables 1 and 5 use the first)")
    p.add_argument("--nli-pairs", type=int, help="SNLI pairs per NLI training (default: 10000, tables 2/6: 2000)")
    p.add_argument("--sts-pairs", type=int, help="STSb train pairs per regression run (table2: 5749, table6: 2000)")
    p.add_argument("--sts", action="append", default=[], help="table1: more STS tasks, sts:STS12-DIR, sick:FILE")
    p.add_argument("--transfer", action="append", default=[], help="table5: more tasks, transfer:SentEval-DIR")
    p.add_argument("--repeats", type=int, default=3, help="table7: timed runs per row (median)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Check the inputs, run what is missing from OUTPUT/TABLE.json, write the table."""
    from sbert.formats.layout import atomic_file

    table = "table6" if args.table == "ablation" else args.table
    seeds = _seeds(args.seeds)
    nli_default, sts_default = DEFAULT_PAIRS.get(table, (0, 0))
    nli_pairs = args.nli_pairs if args.nli_pairs is not None else nli_default
    sts_pairs = args.sts_pairs if args.sts_pairs is not None else sts_default
    if args.repeats < 1 or (table != "table7" and nli_pairs < 1) or (table in {"table2", "table6"} and sts_pairs < 1):
        raise SbertError("--nli-pairs, --sts-pairs and --repeats must be positive")
    if args.data is None:
        from sbert.data.home import data_home

        args.data = data_home()
    _check_data(args.data, table)
    args.output.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    text = RUNNERS[table](args, seeds, nli_pairs, sts_pairs)
    with atomic_file(args.output / f"{table}.md") as f:
        f.write(text.encode("utf-8"))
    print(text)
    print(f"wall time {time.monotonic() - started:.0f} s; table in {args.output / table}.md", file=sys.stderr)
    return 0


def _seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise SbertError(f"--seeds {text!r}: expected comma-separated integers") from None
    if not seeds:
        raise SbertError("--seeds: give at least one seed")
    return seeds


def _check_data(data: Path, table: str) -> None:
    """A missing or broken input fails now, not after an hour of training."""
    from sbert.data import load_dataset

    needs = {"table1": ["nli:snli", "stsb:stsbenchmark/sts-test.csv"], "table5": ["nli:snli"],
             "table2": ["nli:snli", "stsb:stsbenchmark/sts-train.csv", "stsb:stsbenchmark/sts-test.csv"],
             "table6": ["nli:snli", "stsb:stsbenchmark/sts-train.csv", "stsb:stsbenchmark/sts-dev.csv"],
             "table7": ["stsb:stsbenchmark/sts-test.csv"]}  # fmt: skip
    for spec in needs[table]:
        fmt, _, rel = spec.partition(":")
        load_dataset(f"{fmt}:{data / rel}")
    if table == "table5" and not (data / "sst2").is_dir():
        raise SbertError(f"{data / 'sst2'}: no such folder (SST-2 in SentEval layout)")


def _results(args: argparse.Namespace, table: str, settings: dict[str, object]) -> Results:
    from sbert.reproduce.runs import Results

    return Results(args.output / f"{table}.json", settings)


def _unsupervised(table: str) -> Runner:
    def runner(args: argparse.Namespace, seeds: tuple[int, ...], nli_pairs: int, _sts: int) -> str:
        from sbert.evaluation.tasks import load_tasks
        from sbert.reproduce import unsupervised as u

        s = u.EvalSettings(args.model, args.data, nli_pairs, seeds[0], tuple(args.sts), tuple(args.transfer))
        for spec in (*s.sts, *s.transfer):
            load_tasks(spec)  # bad extra tasks fail before training
        results = _results(args, table, s.as_dict())
        layout = u.build(table, s, u.nli_model(s, args.output / "work"))
        u.evaluate_rows(layout, results, s.seed)
        notes = [f"Starting model `{s.model}`; its SNLI row: its transformer with a fresh mean-pooling head, one pass "
                 f"over {nli_pairs} SNLI pairs (a seeded sample "
                 "of dev+test), classification objective, batch 16, lr 2e-5, seed "
                 f"{s.seed}. The paper's rows start from BERT-base and train on 1M SNLI + MultiNLI pairs."]  # fmt: skip
        return u.render(layout, results, notes)

    return runner


def _table2(args: argparse.Namespace, seeds: tuple[int, ...], nli_pairs: int, sts_pairs: int) -> str:
    from sbert.reproduce.supervised import SupervisedSettings, render, run_table2

    s = SupervisedSettings(args.model, args.data, seeds, nli_pairs, sts_pairs)
    results = _results(args, "table2", s.as_dict())
    run_table2(s, results, args.output / "work")
    return render(results, s)


def _table6(args: argparse.Namespace, seeds: tuple[int, ...], nli_pairs: int, sts_pairs: int) -> str:
    from sbert.data import load_dataset
    from sbert.reproduce.ablation import AblationSettings, ablation_runs, render
    from sbert.reproduce.runs import run_all

    s = AblationSettings(args.model, args.data, seeds, nli_pairs, sts_pairs)
    results = _results(args, "table6", s.as_dict())
    dev = load_dataset(f"stsb:{args.data / 'stsbenchmark' / 'sts-dev.csv'}")
    run_all(ablation_runs(s), results, args.output / "work", dev)
    return render(results, s)


def _table7(args: argparse.Namespace, _seeds: tuple[int, ...], _nli: int, _sts: int) -> str:
    from sbert.reproduce.speed import SpeedSettings, render, run_table7

    s = SpeedSettings(args.model, args.data, args.repeats)
    results = _results(args, "table7", s.as_dict())
    run_table7(s, results)
    return render(results, s)


RUNNERS: dict[str, Runner] = {"table1": _unsupervised("table1"), "table5": _unsupervised("table5"), "table2": _table2,
           "table6": _table6, "table7": _table7}  # fmt: skip
