"""Where a request's CPU goes in `sbert serve` under one-text requests: each thread's CPU, and the loop's stages.

    python benchmarks/serve/serve_profile.py [--seconds 10] [--clients 16] [--per-request 1]

Starts `sbert serve` (the default model, CPU) on 127.0.0.1, puts serve_cpu.py's load on it (16 keep-alive
clients posting one STS benchmark sentence each) and, after a warm-up, measures one window two ways:
- each server thread's CPU time over the window (psutil, per OS thread), grouped by role: the event loop
  (HTTP parsing, validation, scheduling, serializing, sending), the threadpool that counts a request's
  tokens, the model thread (groups run across the cores: planning them, the model), the lane threads
  (groups kept to one thread) and the per-core batch threads;
- py-spy's samples of the event-loop thread's Python stacks (`pip install py-spy`, the bench extra), each
  put in the stage of its innermost frame that names one; a sample whose innermost Python frame is the
  loop's own run (uvloop's C code: waiting in epoll, socket reads and writes) is counted apart.
Per text: each thread role's CPU ms per text served, the system CPU and minor page faults, and the loop's
samples by stage; beside them offline encode's CPU a text over exactly the texts the window served (after
it, in this process, the server stopped), so the model threads' share of the gap (the same work, done inside a loaded
server) stands apart from the loop's. With PYTHONPATH=OTHER/src the server is another checkout's sbert.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_cpu import free_port, group_counts, offline_cpu
from serve_load import load, start_server

from common import sts_sentences

# Thread roles by the Python thread name py-spy reports (the batch pool's threads live as long as the process).
ROLES = (("MainThread", "event loop"), ("AnyIO worker", "token count (threadpool)"),
         ("sbert-model", "model thread"), ("sbert-encode", "lane threads"),
         ("sbert-batch", "per-core batch threads (model)"))  # fmt: skip
MODEL_ROLES = ("model thread", "lane threads", "per-core batch threads (model)")
# The event loop's stages: (stage, frame marks), matched from the innermost frame outwards.
STAGES = (
    ("serialize", ("FastJSON", "orjson", "encode_rows", "shaped_rows", "render (")),
    ("send", ("RequestResponseCycle.send", "send_with_data_passthrough", "write (")),
    (
        "parse",
        (
            "sbert/serve/fast_path.py",
            "h11",
            "httptools",
            "Request.body",
            "json",
            "pydantic",
            "RequestResponseCycle.receive",
        ),
    ),
    ("validate", ("sbert/serve/routes.py", "sbert/serve/state.py", "sbert/serve/service.py", "check_")),
    ("schedule", ("scheduler.py", "anyio", "run_in_threadpool", "Future", "Task", "futures")),
    ("framework", ("starlette", "fastapi", "uvicorn", "sbert/serve/app.py")),
)
LOOP_NATIVE = "Runner.run"  # the innermost Python frame while uvloop's C code runs (epoll, socket I/O)


def role_of(name: str) -> str:
    """A thread's role from its Python name."""
    return next((role for prefix, role in ROLES if name.startswith(prefix)), "other")


def stage_of(frames: list[str]) -> str:
    """The stage of the innermost frame that names one (`loop (native)` for uvloop's own code, else `other`)."""
    if frames[-1].startswith(LOOP_NATIVE):
        return "loop (native)"
    for frame in reversed(frames):
        for stage, marks in STAGES:
            if any(mark in frame for mark in marks):
                return stage
    return "other"


def read_stacks(raw: Path) -> tuple[dict[int, str], collections.Counter[str]]:
    """py-spy's raw output: each thread id's name, and the event loop's samples by stage."""
    names: dict[int, str] = {}
    stages: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        head, *frames = stack.split(";")
        found = re.match(r"thread \((\d+)\): (.*)", head)
        if not found or not frames:
            continue
        names[int(found.group(1))] = found.group(2)
        if found.group(2) == "MainThread":
            stages[stage_of(frames)] += int(n)
    return names, stages


def process_cpu(pid: int) -> float:
    """User + system seconds of the whole process, its ended threads included."""
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def system_and_faults(pid: int) -> tuple[float, int]:
    """System seconds of the whole process and its minor page faults (Linux's /proc; 0 faults elsewhere).

    A fault is a page the kernel hands the process again: under merged groups of random sizes, glibc's own
    mmap threshold had the batch threads fault their activations in afresh (serve/server.py keep_freed_memory).
    """
    try:
        faults = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[7])
    except OSError:
        faults = 0
    return psutil.Process(pid).cpu_times().system, faults


def thread_cpu(pid: int) -> dict[int, float]:
    """User + system seconds of each thread of the process."""
    return {t.id: t.user_time + t.system_time for t in psutil.Process(pid).threads()}


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
    work = tempfile.TemporaryDirectory(prefix="sbert-profile-")
    raw = Path(work.name) / "stacks.txt"
    try:
        asyncio.run(load(port, sentences, args.per_request, args.clients, 3.0))  # warm-up
        spy = subprocess.Popen([args.py_spy, "record", "--pid", str(server.pid), "--duration", str(int(args.seconds)),
                                "--rate", "100", "--threads", "--format", "raw", "-o", str(raw), "--nonblocking"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        time.sleep(0.3)
        before, process_before, groups_before = thread_cpu(server.pid), process_cpu(server.pid), group_counts(port)
        kernel_before = system_and_faults(server.pid)
        stats = asyncio.run(load(port, sentences, args.per_request, args.clients, args.seconds))
        after, process_after, groups_after = thread_cpu(server.pid), process_cpu(server.pid), group_counts(port)
        kernel_after = system_and_faults(server.pid)
        spy.wait()
    finally:
        server.terminate()
        server.wait(timeout=60)
    names, stages = read_stacks(raw)
    work.cleanup()
    texts = max(stats["sentences"], 1)
    by_role: dict[str, float] = collections.defaultdict(float)  # CPU seconds by role (a Counter holds ints)
    for tid, seconds in after.items():
        by_role[role_of(names.get(tid, "?"))] += seconds - before.get(tid, 0.0)
    total = process_after - process_before
    # Threads that ended inside the window are in the process's time only.
    by_role["ended threads"] += total - sum(by_role.values())
    rate = stats["sentences"] / stats["seconds"]
    print(f"{args.clients} clients x {args.per_request} text(s)/request, {args.seconds:.0f} s: {rate:.1f} texts/s, "
          f"server CPU {1000 * total / texts:.2f} ms/text")  # fmt: skip
    grouped, groups = (after_n - before_n for after_n, before_n in zip(groups_after, groups_before, strict=True))
    print(f"  merged groups: {groups:.0f}, {grouped / max(groups, 1):.1f} texts each on average")
    system, faults = (after_k - before_k for after_k, before_k in zip(kernel_after, kernel_before, strict=True))
    print(f"  system CPU {1000 * system / texts:.2f} ms/text, minor page faults {faults / texts:.1f} a text")
    for role, seconds in sorted(by_role.items(), key=lambda item: -item[1]):
        print(f"  {role:>24}: {1000 * seconds / texts:5.2f} ms/text ({100 * seconds / total:4.1f}%)")
    alone = offline_cpu(stats["texts"], "torch")  # the window's own texts, right after it (the server is gone)
    model = sum(by_role[role] for role in MODEL_ROLES)
    print(f"  offline encode of the same texts: {1000 * alone:.2f} ms/text; server {total / texts / alone:.2f}x of it, "
          f"its model threads (model, lane and batch threads) {model / texts / alone:.2f}x")  # fmt: skip
    loop = sum(stages.values())
    print(f"  event loop samples by stage ({loop}):")
    for stage, n in stages.most_common():
        print(f"  {stage:>24}: {100 * n / loop:4.1f}%")


if __name__ == "__main__":
    main()
