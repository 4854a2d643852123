"""Run the `sbert` command in this test process: exit status, stdout and stderr as a subprocess gives them.

A subprocess pays for importing torch and transformers again (seconds on a quiet machine, minutes on
a loaded CI one), so tests of what a command computes and prints run it here. Tests of what only a
separate process shows (the installed entry point, kill-and-resume, worker processes, servers) keep
`run_subprocess`.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
from dataclasses import dataclass

import torch

# What every test subprocess gets: no Hub lookups, no tokenizer thread pools (tests/conftest.py sets
# the same in this process).
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


@dataclass(frozen=True)
class CliResult:
    """What one run of the command left: its exit status and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, stdin: bytes | str | None = None) -> CliResult:
    """`sbert ARGS` in this process, with `stdin` as its standard input.

    The command's log lines reach its stderr as they would in a subprocess (level WARNING, INFO with
    --verbose), so a test that a failure prints exactly one line still sees stray warnings. The torch
    thread count a command sets (--threads) is restored afterwards.
    """
    from sbert.cli.main import main

    data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(err_bytes, encoding="utf-8", write_through=True)
    log = logging.StreamHandler(err)
    log.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    log.setLevel(logging.INFO if {"-v", "--verbose"} & set(args) else logging.WARNING)
    saved, threads = (sys.stdin, sys.stdout, sys.stderr), torch.get_num_threads()
    sys.stdin, sys.stdout, sys.stderr = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"), out, err
    logging.getLogger().addHandler(log)
    try:
        code = main(list(args))
    except SystemExit as e:  # argparse: --help, --version and usage errors
        code = e.code if isinstance(e.code, int) else int(e.code is not None)
    finally:
        logging.getLogger().removeHandler(log)
        sys.stdin, sys.stdout, sys.stderr = saved
        torch.set_num_threads(threads)
    return CliResult(code, out_bytes.getvalue().decode("utf-8"), err_bytes.getvalue().decode("utf-8"))


def run_subprocess(*args: str, stdin: bytes | None = None, timeout: float = 1500) -> CliResult:
    """`python -m sbert.cli.main ARGS` in a new process, for what only a separate process shows.

    The hang guard is long: beside a test run, importing torch in a new process has taken over 15
    minutes on a throttled 2-core machine.
    """
    proc = subprocess.run(
        [sys.executable, "-m", "sbert.cli.main", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=timeout,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)
