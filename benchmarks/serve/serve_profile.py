"""Where a request's time goes in `sbert serve`: py-spy samples of the server under one-text requests, by stage.

    python benchmarks/serve/serve_profile.py [--seconds 10] [--clients 16] [--per-request 1]

Starts `sbert serve` (the default model, CPU) on 127.0.0.1, puts the load of serve_cpu.py on it (16
keep-alive clients posting one STS benchmark sentence each), and after a warm-up records the server
with py-spy (`pip install py-spy`, the bench extra) for the window. Each sample is one thread's stack;
a stack is put in the first stage whose frames it holds, in the order below, and samples of threads
waiting (a lock, a queue, epoll) are counted apart as idle. Printed: each stage's share of the busy
samples, and its share in ms of server CPU per text when the window's process-tree CPU is split the
same way.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_cpu import free_port, tree_cpu
from serve_load import load, start_server

from common import sts_sentences

# (stage, frame substrings): the first stage with a matching frame takes the sample. Idle first, so a
# thread parked in a wait is never counted as work.
STAGES = (
    ("idle", ("Condition.wait", "Queue.get", "_worker (concurrent", "select (selectors", "Event.wait")),
    ("tokenize", ("token_ids", "fast_ids", "token_lengths", "count_tokens", "encode_batch")),
    ("encode", ("forward (", "packed_chain_forward", "embed_padded", "TorchCpuBackend", "pack (")),
    ("engine", ("sbert/encoding/", "sbert/dense/", "sbert/backends/")),
    ("serialize", ("FastJSON", "orjson", "encode_rows", "shaped_rows", "render (")),
    ("send", ("RequestResponseCycle.send", "send_with_data_passthrough", "write (")),
    ("parse", ("h11", "httptools", "Request.body", "json", "pydantic", "validate", "RequestResponseCycle.receive")),
    ("validate", ("sbert/serve/routes.py", "sbert/serve/state.py", "check_", "Guard", "middleware")),
    ("schedule", ("scheduler.py", "anyio", "asyncio", "run_in_threadpool", "concurrent/futures")),
)


def stage_of(stack: str) -> str:
    """The stage a py-spy stack belongs to (`other` when none matches)."""
    for stage, marks in STAGES:
        if any(mark in stack for mark in marks):
            return stage
    return "other"


def tally(raw: Path) -> collections.Counter[str]:
    """Samples per stage from py-spy's raw output (one `frames count` line per distinct stack)."""
    counts: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if stack:
            counts[stage_of(stack)] += int(n)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--per-request", type=int, default=1)
    parser.add_argument("--py-spy", default=str(Path(sys.executable).with_name("py-spy")))
    args = parser.parse_args()
    sentences = list(dict.fromkeys(sts_sentences()))
    port = free_port()
    server = start_server(port, "torch")
    raw = Path(tempfile.mkdtemp(prefix="sbert-profile-")) / "stacks.txt"
    try:
        asyncio.run(load(port, sentences, args.per_request, args.clients, 3.0))  # warm-up
        spy = subprocess.Popen([args.py_spy, "record", "--pid", str(server.pid), "--duration", str(int(args.seconds)),
                                "--rate", "100", "--threads", "--format", "raw", "-o", str(raw), "--nonblocking"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        time.sleep(0.3)
        before = tree_cpu(server.pid)
        stats = asyncio.run(load(port, sentences, args.per_request, args.clients, args.seconds))
        cpu = tree_cpu(server.pid) - before
        spy.wait()
    finally:
        server.terminate()
    counts = tally(raw)
    busy = sum(n for stage, n in counts.items() if stage != "idle")
    per_text = 1000 * cpu / max(stats["sentences"], 1)
    print(f"{args.clients} clients x {args.per_request} text(s)/request, {args.seconds:.0f} s: "
          f"{stats['sentences'] / stats['seconds']:.1f} texts/s, server CPU {per_text:.2f} ms/text, "
          f"{busy} busy samples ({counts['idle']} idle)")  # fmt: skip
    for stage, n in counts.most_common():
        if stage != "idle":
            print(f"  {stage:>9}: {100 * n / busy:5.1f}% of busy samples, ~{per_text * n / busy:.2f} ms/text")


if __name__ == "__main__":
    main()
