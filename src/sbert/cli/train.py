"""`sbert train`: fine-tune an encoder with the siamese / triplet objectives (or a TOML recipe)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from sbert.errors import SbertError
from sbert.names import DENSE_ACTIVATIONS, OBJECTIVES, POOLER_NAMES

_STAGE_FLAGS = (
    "epochs", "batch_size", "lr", "warmup", "weight_decay", "eval_steps", "max_steps", "batch_tokens", "grad_accum",
    "matryoshka", "sampling", "select",
)  # fmt: skip
_RUN_FLAGS = ("model", "output", "seed", "pooling", "dense", "max_seq_length", "checkpoint_steps", "precision",
              "device", "lora", "log_steps")  # fmt: skip


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "train", help="fine-tune a model (classification, regression, triplet, ...)", description=__doc__
    )
    p.add_argument("--config", type=Path, help="TOML recipe (multi-stage); flags given here override it")
    p.add_argument("--model", "-m", help="starting model: alias, sentence-transformers dir, plain encoder dir")
    _data_flags(p)
    _schedule_flags(p)
    _model_flags(p)
    p.add_argument("--precision", choices=["auto", "fp32", "bf16", "fp16"])
    p.add_argument("--device")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint")
    p.add_argument("--skip-bad", action="store_true", help="skip malformed data lines and report how many")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(run=run)


def _data_flags(p: argparse.ArgumentParser) -> None:
    """What trains and what is scored: sets, objectives, columns, sampling, dev sets."""
    p.add_argument(
        "--objective",
        action="append",
        default=[],
        help=f"{' | '.join(OBJECTIVES)} (repeat with --train); none: chosen from each table's columns "
        "(pairs and triplets mnrl, scored pairs cosent, labelled pairs classification)",
    )
    p.add_argument("--train", action="append", default=[], help="FORMAT:PATH, e.g. stsb:sts-train.csv (repeatable)")
    p.add_argument(
        "--columns",
        action="append",
        default=[],
        metavar="ROLE=COLUMN,...",
        help="a table's column roles, e.g. anchor=q,positive=doc,score=rating (one per --train, in order; "
        "'' infers them)",
    )
    p.add_argument(
        "--stream", type=int, metavar="ROWS",
        help="read parquet:/hf: --train tables piece by piece through a seeded shuffle buffer of ROWS rows "
        "(tables larger than memory); the same as stream=ROWS in a spec",
    )  # fmt: skip
    p.add_argument(
        "--sampling",
        choices=["round-robin", "proportional"],
        help="how several --train sets take turns: in turn (default) or each by its share of all batches",
    )
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="objective option: concat=u,v,|u-v| margin=1 distance=euclidean scale=20",
    )
    p.add_argument(
        "--dev",
        action="append",
        default=[],
        help="FORMAT:PATH scored during training, the best model kept (ir:BEIR-DIR[:split]: by nDCG@10); "
        "repeatable: the mean of their headline metrics decides, or --select",
    )
    p.add_argument("--select", help="with several --dev: DEV-SPEC:METRIC that picks the best model, e.g. "
                   "ir:data/snli-ir:ndcg@10")  # fmt: skip


def _schedule_flags(p: argparse.ArgumentParser) -> None:
    """Where the model goes and how the steps run: batches, learning rate, evaluation, checkpoints."""
    p.add_argument("--output", "-o", help="output model folder (checkpoints go to OUTPUT.run/)")
    p.add_argument("--epochs", type=int)
    p.add_argument("--batch-size", type=int)
    p.add_argument(
        "--batch-tokens",
        type=int,
        help="batches of this many padded tokens (all text columns) instead of --batch-size examples",
    )
    p.add_argument("--grad-accum", type=int, help="batches whose gradients add up to one optimizer step (1)")
    p.add_argument("--lr", type=float)
    p.add_argument("--warmup", type=float, help="share of steps for linear warm-up (0.1)")
    p.add_argument("--weight-decay", type=float)
    p.add_argument("--seed", type=int)
    p.add_argument("--eval-steps", type=int, help="evaluate every N steps (0: each epoch end)")
    p.add_argument("--checkpoint-steps", type=int, help="checkpoint every N steps (0: never)")
    p.add_argument("--max-steps", type=int, help="stop a stage after N steps")
    p.add_argument("--log-steps", type=int, help="log the loss every N steps (10): a host sync each time")


def _model_flags(p: argparse.ArgumentParser) -> None:
    """What is trained: a fresh head, sequence length, Matryoshka dimensions, a LoRA adapter."""
    p.add_argument(
        "--pooling",
        choices=POOLER_NAMES,
        help="start a fresh head on the model's transformer: a pooling mode, cnn (CNN-SBERT) or ngram-cnn (IS-BERT)",
    )
    p.add_argument(
        "--dense", action="append", metavar="OUT[:ACTIVATION]",
        help=f"after the fresh head, a projection to OUT dimensions (repeatable; {', '.join(DENSE_ACTIVATIONS)})",
    )  # fmt: skip
    p.add_argument("--max-seq-length", type=int)
    p.add_argument(
        "--matryoshka",
        metavar="DIM[:W],...",
        help="also train every objective on these leading dimensions, e.g. 384,256,128,64 (Matryoshka loss)",
    )
    p.add_argument(
        "--lora", metavar="r=16,alpha=32[,dropout=0.05,targets=q,v,heads=auto]",
        help="train a LoRA adapter only (attention projections by default); the model saves as the adapter alone",
    )  # fmt: skip
    p.add_argument("--gradient-checkpointing", action="store_true", help="recompute activations in backward (less "
                   "memory for long inputs, ~30%% slower)")  # fmt: skip
    p.add_argument("--compile", nargs="?", const="inductor", choices=["inductor", "aot_eager"], default=None,
                   help="run each step's forward and loss through torch.compile (fewer GPU kernel launches); "
                   "eager, with one log line, where compiling is unavailable")  # fmt: skip
    p.add_argument("--no-gather-across-ranks", action="store_true", help="under torchrun, score each rank's share "
                   "of the batch alone (default: in-batch negatives and pairs from every rank)")  # fmt: skip


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """KEY=VALUE strings -> a dict with numbers parsed."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SbertError(f"--option {pair!r}: expected KEY=VALUE")
        try:
            options[key] = int(value)
        except ValueError:
            try:
                options[key] = float(value)
            except ValueError:
                options[key] = value
    return options


def build_config(args: argparse.Namespace) -> Any:
    """A TrainConfig from a recipe file and/or the flags."""
    from sbert.training.config import Objective, Stage, TrainConfig, load_config

    flags = {k: getattr(args, k) for k in _RUN_FLAGS if getattr(args, k) is not None}
    flags["skip_bad"] = args.skip_bad
    if args.gradient_checkpointing:
        flags["gradient_checkpointing"] = True
    if args.compile:
        flags["compile"] = args.compile
    if args.no_gather_across_ranks:
        flags["gather_across_ranks"] = False
    if "dense" in flags:
        flags["dense"] = tuple(flags["dense"])
    if args.config is not None:
        if args.train or args.objective or args.columns or args.stream is not None:
            raise SbertError("--train/--objective/--columns/--stream go in the --config file's [[stage]] tables, "
                             "not both")  # fmt: skip
        config = load_config(args.config, flags)
        # Stage flags given beside a recipe apply to each of its stages (e.g. --batch-tokens on a GPU).
        stage_flags = {k: getattr(args, k) for k in _STAGE_FLAGS if getattr(args, k) is not None}
        config = replace(config, stages=tuple(replace(s, **stage_flags) for s in config.stages))
        config.validate()
        return config
    objectives_named = args.objective or ["auto"] * len(args.train)  # none: each table's kind picks (losses.AUTO)
    if len(objectives_named) != len(args.train):
        raise SbertError(f"give one --objective per --train, or none to let each table's columns choose "
                         f"(got {len(args.objective)} and {len(args.train)})")  # fmt: skip
    if not args.model or not args.output:
        raise SbertError("--model and --output are required (or use --config)")
    options = parse_options(args.option)
    objectives = tuple(Objective(o, t, options) for o, t in zip(objectives_named, _with_columns(args), strict=True))
    stage_flags = {k: getattr(args, k) for k in _STAGE_FLAGS if getattr(args, k) is not None}
    dev = tuple(args.dev) if len(args.dev) > 1 else (args.dev[0] if args.dev else None)
    config = TrainConfig(stages=(Stage(objectives, dev=dev, **stage_flags),), **flags)
    config.validate()
    return config


def _with_columns(args: argparse.Namespace) -> list[str]:
    """Each --train spec with its --columns roles (and --stream's buffer) folded into the spec's options."""
    from sbert.data import split_spec, with_option

    specs = list(args.train)
    if args.stream is not None:
        tables = [t for t in specs if split_spec(t)[0] in ("parquet", "hf")]
        if not tables:
            raise SbertError("--stream reads parquet: and hf: tables, and no --train names one")
        specs = [with_option(t, "stream", str(args.stream)) if t in tables else t for t in specs]
    if not args.columns:
        return specs
    if len(args.columns) != len(specs):
        raise SbertError(f"give one --columns per --train ('' to infer; got {len(args.columns)} and {len(specs)})")
    return [with_option(t, "columns", c) if c else t for t, c in zip(specs, args.columns, strict=True)]


def run(args: argparse.Namespace) -> int:
    """Validate everything, then train."""
    from sbert.training import Trainer

    config = build_config(args)
    result = Trainer(config, show_progress=not args.no_progress).run(resume=args.resume)
    if os.environ.get("RANK", "0") != "0":
        return 0  # under torchrun only the main process reports
    best = f", best dev {result.best_score:.2f}" if result.best_score is not None else ""
    print(f"trained {result.steps} steps in {result.seconds:.0f} s{best}; model in {result.output}", file=sys.stderr)
    return 0
