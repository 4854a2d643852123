"""`sbert merge-adapter IN OUT`: fold a model's LoRA adapter into its weights and write a plain model."""

from __future__ import annotations

import argparse
import sys

from sbert.errors import SbertError


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "merge-adapter", help="write a model with its LoRA adapter merged in (for export and serving)",
        description=__doc__,
    )  # fmt: skip
    p.add_argument("input", help="a model whose Transformer holds an adapter (or a bare PEFT adapter folder)")
    p.add_argument("output", help="folder for the merged model (written atomically)")
    p.add_argument("--adapter", metavar="DIR", action="append", default=[],
                   help="load this adapter onto IN first (repeatable with --name; the last one is merged)")  # fmt: skip
    p.add_argument("--name", action="append", default=[], help="the name of each --adapter (default: adapter1, ...)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Load, merge the active adapter, save atomically (nothing is written on a failure)."""
    from sbert.dense.model import SentenceEncoder

    model = SentenceEncoder.load(args.input, device="cpu")
    names = args.name or [f"adapter{i + 1}" for i in range(len(args.adapter))]
    if len(names) != len(args.adapter):
        raise SbertError(f"give one --name per --adapter (got {len(names)} and {len(args.adapter)})")
    for folder, name in zip(args.adapter, names, strict=True):
        model.load_adapter(folder, name)
    if model.router is not None or not getattr(model.input_module, "has_adapter", False):
        raise SbertError(f"{args.input}: holds no LoRA adapter to merge")
    model.save(args.output, merge_adapter=True)
    print(f"merged the adapter into {args.output}", file=sys.stderr)
    return 0
