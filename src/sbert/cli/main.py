"""Entry point of the `sbert` command: parse, dispatch, turn user errors into one line and exit 2."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from sbert.cli import (
    cross_encoder,
    crossval,
    data,
    demo,
    distill,
    encode,
    encode_sparse,
    evaluate,
    export,
    index,
    merge_adapter,
    mine_negatives,
    report,
    reproduce,
    rotate,
    search,
    serve,
    similarity,
    train,
    train_csr,
)
from sbert.errors import SbertError, first_line
from sbert.version import __version__

# Each subcommand module exposes add_parser(subparsers); order is the order `--help` lists them.
SUBCOMMANDS = (
    encode, encode_sparse, similarity, search, index, export, serve, train, train_csr, cross_encoder, evaluate,
    crossval, report, reproduce, data, mine_negatives, distill, merge_adapter, rotate, demo,
)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    parser = argparse.ArgumentParser(prog="sbert", description="Sentence-BERT sentence embeddings.")
    parser.add_argument("--version", action="version", version=f"sbert {__version__}")
    parser.add_argument("--verbose", "-v", action="store_true", help="log loading details")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in SUBCOMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (2 for bad input)."""
    args = build_parser().parse_args(argv)
    _quiet_libraries(args.verbose)
    try:
        return int(args.run(args))
    except (SbertError, ValueError, TypeError) as e:
        print(f"sbert {args.command}: error: {first_line(e)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader left (`sbert demo | head`): stop quietly, as a SIGPIPE'd tool does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail again
        return 128 + 13
    except OSError as e:
        print(
            f"sbert {args.command}: error: {e.strerror or e}: {e.filename or ''}".rstrip(": "),
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        return 130


def _quiet_libraries(verbose: bool) -> None:
    # Weight-loading progress bars and advisory warnings drown the one line a user needs.
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(message)s")
    if not verbose:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()


if __name__ == "__main__":
    sys.exit(main())
