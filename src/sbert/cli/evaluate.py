"""`sbert eval`: score a model (or a baseline) on STS, triplet and SentEval transfer tasks.

Writes results.json, results.md (the paper's Table 1 and Table 5 layouts) and PNG plots: one
scatter of cosine against gold per STS set, one bar chart of every score.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sbert.cli.common import add_model_args, load_encoder
from sbert.errors import SbertError


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("eval", help="score a model on STS / transfer / triplet / retrieval sets", description=__doc__)
    p.add_argument(
        "--task",
        "-t",
        action="append",
        required=True,
        help="FORMAT:PATH: stsb:sts-test.csv, sts:STS12-dir, sick:SICK.txt, transfer:SentEval-downstream-dir, "
        "mr:DIR, cr:DIR, subj:DIR, mpqa:DIR, sst2:DIR, trec:DIR, mrpc:DIR, topic-pairs[scale=0-1]:FILE, "
        "nli-triplets:DIR:test, ir:BEIR-DIR[:split] (nDCG@10, MRR@10, MAP@100, Recall@k), ...",
    )
    p.add_argument("--output", "-o", type=Path, help="folder for results.json, results.md and plots")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--seed", type=int, default=1111, help="seed of the cross-validation folds (SentEval's 1111)")
    p.add_argument(
        "--transfer-protocol", choices=("senteval", "standardized"), default="senteval",
        help="transfer tasks: SentEval's (raw vectors, C in 2^-2..2^3, 10 inner folds) or standardised features",
    )  # fmt: skip
    p.add_argument("--name", help="the model's name in tables (default: --model)")
    p.add_argument("--strict", action="store_true", help="ir: qrels naming unknown queries or documents are an error")
    p.add_argument("--dims", help="also score each task at these leading dimensions, e.g. 256,128,64 (Matryoshka)")
    p.add_argument("--reranker", help="ir: rerank each query's top hits with this cross-encoder folder")
    p.add_argument("--rerank-top", type=int, default=100, help="ir: hits per query the reranker reorders (default 100)")
    p.add_argument("--sparse-model", help="ir: also score this SparseEncoder (SPLADE / CSR) alone and fused with "
                   "--model (rrf and weighted hybrids), each with every metric")  # fmt: skip
    p.add_argument("--alpha", type=float, default=0.5, help="ir: the dense side's weight in the weighted hybrid (0.5)")
    add_model_args(p)
    p.epilog = "--model also takes the baselines glove (GloVe 6B 50d), glove:PATH, avg:ENCODER and cls:ENCODER"
    p.set_defaults(run=run)


def check_task_paths(specs: list[str]) -> None:
    """A one-line error for a task whose file or folder is missing; the full checks come with load_tasks.

    Only the formats sbert knows (an unknown one is load_tasks' error, naming the known ones); sbert.data
    and the SentEval folder names import in a fraction of a second, torch is not among them.
    """
    from sbert.data import KNOWN_FORMATS
    from sbert.data.senteval import TASK_FOLDERS

    known = {*KNOWN_FORMATS, "ir", "transfer", *(name.lower() for name in TASK_FOLDERS)}
    for spec in specs:
        fmt, sep, path = spec.partition(":")
        if not sep or not path or fmt not in known:  # malformed, unknown or with [options]: load_tasks says
            continue
        # DIR:SPLIT (ir:, nli:, hf:) names a split after the folder
        candidates = [Path(p).expanduser() for p in (path, path.rpartition(":")[0]) if p]
        if not any(c.exists() for c in candidates):
            raise SbertError(f"--task {spec}: {candidates[-1]}: no such file or folder")


def run(args: argparse.Namespace) -> int:
    """Read every task first (bad input fails before encoding), then score each."""
    check_task_paths(args.task)  # in a second, before torch and the model take several
    from sbert.baselines import load_baseline
    from sbert.evaluation.report import write_results
    from sbert.evaluation.tasks import load_tasks, run_task, scores_by_dimension

    if args.output is not None and args.output.exists() and not args.output.is_dir():
        raise SbertError(f"{args.output}: exists and is not a folder")
    tasks = [task for spec in args.task for task in load_tasks(spec, args.strict)]
    dims = parse_dims(args.dims) if args.dims else []
    if args.rerank_top < 1:
        raise SbertError(f"--rerank-top must be positive, got {args.rerank_top}")
    for flag, given in (("--reranker", args.reranker), ("--sparse-model", args.sparse_model)):
        if given and not any(task.retrieval is not None for task in tasks):
            raise SbertError(f"{flag} works on retrieval hits: add an ir:DIR task")
    if not 0 <= args.alpha <= 1:
        raise SbertError(f"--alpha {args.alpha}: must be in [0, 1] (the dense ranking's weight)")
    sparse = _sparse_model(args)
    model = load_baseline(args.model, args.device) or _multi_vector(args, tasks) or load_encoder(args)
    reranker = None
    if args.reranker:
        from sbert.reranker.model import CrossEncoder

        reranker = CrossEncoder.load(args.reranker, device=args.device)
    run_record: dict = {"model": args.name or args.model, "tasks": {}}
    if reranker is not None:
        run_record |= {"reranker": args.reranker, "rerank_top": args.rerank_top}
    plots = []
    for task in tasks:
        outcome = run_task(model, task, args.batch_size, args.seed, args.transfer_protocol, reranker, args.rerank_top)
        s = outcome.scores
        if dims:
            s["dims"] = scores_by_dimension(model, task, dims, args.batch_size)
        if sparse is not None and task.retrieval is not None:
            s["modes"] = _modes(model, sparse, task, args)
        run_record["tasks"][task.spec] = s
        print(f"{task.spec}: {s['metric']} {s['headline']:.2f} ({s['size']} examples, "
              f"{s['sentences']} sentences, {s['seconds']:.1f} s)")  # fmt: skip
        if outcome.cosine is not None:
            plots.append((task.column, outcome))
    if args.output is not None:
        write_results(args.output, run_record)
        _plots(args.output, run_record, plots)
        print(f"wrote {args.output / 'results.json'} and results.md", file=sys.stderr)
    return 0


def _multi_vector(args: argparse.Namespace, tasks: list[Any]) -> Any:
    """A multi-vector (ColBERT) --model, which ranks by MaxSim: it evaluates retrieval (ir:DIR) tasks only."""
    from sbert.formats.model_dirs import resolve_model_dir
    from sbert.model_kind import kind_of

    root = resolve_model_dir(args.model)
    if kind_of(root) != "multi-vector":
        return None
    other = [task.spec for task in tasks if task.retrieval is None]
    if other or args.dims or args.sparse_model:
        raise SbertError(f"--model {args.model} is a multi-vector model: it evaluates ir:DIR tasks only, without "
                         f"--dims or --sparse-model (got {', '.join(other) or 'those flags'})")  # fmt: skip
    from sbert.multivector import MultiVectorEncoder

    return MultiVectorEncoder.load(root, device=args.device)


def _sparse_model(args: argparse.Namespace) -> Any:
    """The --sparse-model SparseEncoder, loaded before any encoding (a bad folder fails first)."""
    if not args.sparse_model:
        return None
    from sbert.sparse import SparseEncoder

    return SparseEncoder.load(args.sparse_model, device=args.device)


def _modes(model: Any, sparse: Any, task: Any, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Dense, sparse and hybrid metrics of one retrieval task; one printed line per ranking."""
    from sbert.evaluation.retrieval_modes import evaluate_ir_modes

    modes = evaluate_ir_modes(model, sparse, task.retrieval, args.batch_size, args.alpha)
    for mode, metrics in modes.items():
        print(f"  {mode}: ndcg@10 {metrics['ndcg@10']:.2f}, mrr@10 {metrics['mrr@10']:.2f}, "
              f"recall@100 {metrics['recall@100']:.2f}")  # fmt: skip
    return modes


def _plots(folder: Path, record: dict, sts: list) -> None:
    from sbert.evaluation.plots import bars, scatter

    try:
        for column, outcome in sts:
            name = "".join(c if c.isalnum() or c in "-_" else "_" for c in column)
            scatter(outcome.cosine, outcome.gold, column, outcome.scores["spearman"], folder / f"scatter-{name}.png")
        bars([record], folder / "scores.png")
    except SbertError as e:  # matplotlib missing: the tables are written, the pictures are not
        print(f"sbert eval: plots skipped: {e}", file=sys.stderr)


def parse_dims(text: str) -> list[int]:
    """`"256,128,64"` -> [256, 128, 64], or a one-line error."""
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SbertError(f"--dims {text!r}: expected comma-separated integers, e.g. 256,128,64") from None
