"""The server's own CPU per text against offline encode's, for one-text and 32-text requests.

    python benchmarks/serve/serve_cpu.py [--seconds 15] [--rounds 2] [--backend torch]
    python benchmarks/serve/serve_cpu.py --infinity-python VENV/bin/python   # Infinity beside it, same run
    python benchmarks/serve/serve_cpu.py --variant "one-lane=--lanes 1"     # sbert with other flags, same run
    python benchmarks/serve/serve_cpu.py --variant "arenas8=MALLOC_ARENA_MAX=8"   # or another environment
    python benchmarks/serve/serve_cpu.py --baseline ../before/src           # another checkout's sbert, same run
    python benchmarks/serve/serve_cpu.py --grouped                           # offline in the server's groups too

Starts `sbert serve` (the default model, CPU) on 127.0.0.1 and, after a 3 s warm-up of each, per round
runs two scenarios: 16 keep-alive clients posting one STS benchmark test sentence each, and 4 clients
posting 32 each. The
server's CPU is its process tree's user+system time over the window (psutil), so the clients' own CPU
on the same cores cannot count against it; texts/s, p50 and p99 latency and errors are printed beside
it. The requests take the sentences in one fixed random order, the clients starting spread over it. Offline
encode's CPU per text is this process's CPU time for one `encode` call over exactly the texts the window
served, right after it (the server's goal: concurrent requests merged into full batches); each window's
ratio is to that figure, and the printed ratio is the rounds' median. Servers take turns within a round,
each round starting one server later than the last, so no server keeps one place in the order.
With --infinity-python (a venv holding infinity-emb), Infinity serves the same model folder with its
default engine and gets the same load; with --infinity-onnx too, a second Infinity runs its ONNX engine on
an ONNX copy of the folder (infinity_peer.py). Each Infinity server's vector for one sentence is checked
against sbert's offline encode before the rounds; one that differs is not measured. With --grouped, each sbert
server's window is also set against offline encode called on the same texts in groups as large as the
server's merged groups were on average over the window (its /metrics): what the load's shape costs with no
HTTP, no scheduling and no neighbour, so the rest of the gap is the request path's.

    python benchmarks/serve/serve_cpu.py --infinity-python .venv-infinity/bin/python --infinity-onnx
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
sys.path.insert(0, str(Path(__file__).resolve().parent))  # serve_load.py's client
from infinity_peer import PROBE, onnx_copy, served_drift, start_infinity
from serve_load import MODEL, load, offline_model, offline_seconds, start_server

from common import sts_sentences

SCENARIOS = ((1, 16), (32, 4))  # (texts per request, clients)
WARM_UP_S = 3.0  # unmeasured load before the rounds: the first groups build the packed encoder and warm the caches


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_flags(variants: list[str]) -> dict[str, list[str]]:
    """`sbert serve` flags per server: the default one ("sbert", no flags), then each --variant NAME=FLAGS."""
    return {"sbert": [], **{v.partition("=")[0]: v.partition("=")[2].split() for v in variants}}


def tree_cpu(pid: int) -> float:
    """User + system seconds of a process and its children."""
    process = psutil.Process(pid)
    total = 0.0
    for p in [process, *process.children(recursive=True)]:
        try:
            times = p.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def offline_cpu(sentences: list[str], backend: str) -> float:
    """CPU seconds per text of one in-process encode of all the sentences in one call.

    The server's goal: concurrent requests merge into full batches, so a text costs what it costs offline.
    Measured right after each window over the texts that window served: this machine's speed drifts by 20%
    over minutes (offline 4.9 against 6.0 ms a text in two runs of one commit; 7.2 against 6.5 before and
    after one 12 s window of serve_profile.py), and a text's cost depends on its length.
    """
    return offline_seconds(sentences, backend, time.process_time, repeats=1) / len(sentences)


def group_counts(port: int) -> tuple[float, float]:
    """Texts in all merged groups so far and the number of groups, from an sbert server's /metrics."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    found = {m.group(1): float(m.group(2)) for m in re.finditer(r"^sbert_batch_texts_(sum|count) (\S+)", text, re.M)}
    return found["sum"], found["count"]


def grouped_cpu(sentences: list[str], group: int, backend: str) -> float:
    """CPU seconds per text of in-process encode called on the sentences `group` at a time, in order."""
    return offline_seconds(sentences, backend, time.process_time, repeats=1, group=group) / len(sentences)


def measure(pid: int, port: int, sentences: list[str], per_request: int, clients: int, seconds: float,
            backend: str, grouped: bool = False) -> dict:  # fmt: skip
    """One window's texts/s, server CPU ms per text, p50 / p99 ms and errors, and its ratio to offline encode.

    Offline is one in-process `encode` over exactly the texts the window served (each as often as served),
    right after it; with `grouped` (an sbert server) also those texts encoded in groups of the window's mean
    merged group.
    """
    groups_before = group_counts(port) if grouped else (0.0, 0.0)
    before = tree_cpu(pid)
    stats = asyncio.run(load(port, sentences, per_request, clients, seconds))
    cpu = tree_cpu(pid) - before
    latency = sorted(stats["latency"])
    cpu_ms = 1000 * cpu / max(stats["sentences"], 1)
    offline_ms = 1000 * offline_cpu(stats["texts"], backend) if stats["texts"] else float("nan")
    row = {"rate": stats["sentences"] / stats["seconds"], "cpu_ms": cpu_ms, "errors": stats["errors"],
           "p50": 1000 * latency[len(latency) // 2], "p99": 1000 * latency[int(len(latency) * 0.99)],
           "offline_ms": offline_ms, "ratio": cpu_ms / offline_ms}  # fmt: skip
    if grouped and stats["texts"]:
        texts, groups = (after - b for after, b in zip(group_counts(port), groups_before, strict=True))
        row["group"] = texts / max(groups, 1.0)
        row["grouped_ms"] = 1000 * grouped_cpu(stats["texts"], max(1, round(row["group"])), backend)
        row["grouped_ratio"] = cpu_ms / row["grouped_ms"]
        row["shape_ratio"] = row["grouped_ms"] / offline_ms
    return row


def start_peers(python: str, onnx: bool, scratch: Path, servers: dict[str, subprocess.Popen[bytes] | None],
                ports: dict[str, int]) -> None:  # fmt: skip
    """Infinity's torch engine (and its ONNX engine with `onnx`) into `servers`, each checked for sbert's vectors."""
    source = str(offline_model().source_dir)
    folders = {"infinity": source}
    if onnx:
        folders["infinity-onnx"] = str(onnx_copy(python, source, scratch / "model"))
    reference = offline_model().encode([PROBE])[0]
    for name, folder in folders.items():
        servers[name] = process = start_infinity(python, folder, ports[name], MODEL, onnx=name == "infinity-onnx")
        drift = served_drift(ports[name], MODEL, reference)
        print(f"{name}: its vector for one sentence against sbert's offline encode: max |diff| {drift:.1e}")
        if drift > 1e-4:  # another model, pooling or normalisation: its figures would compare other work
            print(f"{name}: serves other vectors than sbert; not measured")
            process.terminate()
            process.wait()
            servers[name] = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--infinity-python", help="python of a venv with infinity-emb: serve it beside sbert")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=FLAGS",
        help="another sbert server with these `sbert serve` flags (and NAME=VALUE environment words), measured alike "
        "(repeatable)",
    )
    parser.add_argument("--infinity-onnx", action="store_true", help="with --infinity-python: also Infinity's ONNX "
                        "engine (--engine optimum) on an ONNX export of the model folder")  # fmt: skip
    parser.add_argument("--baseline", metavar="SRC", help="src/ of another checkout (a worktree of an earlier "
                        "commit): its sbert serves too, as 'baseline', with no flags, measured alike")  # fmt: skip
    parser.add_argument("--grouped", action="store_true", help="also offline encode in each sbert server's mean "
                        "merged group size over the window, and the server's CPU against that")  # fmt: skip
    args = parser.parse_args()
    if args.infinity_onnx and not args.infinity_python:
        parser.error("--infinity-onnx needs --infinity-python (the venv whose Infinity and optimum it runs)")
    sentences = list(dict.fromkeys(sts_sentences()))
    offline_cpu(sentences[:256], args.backend)  # loads the model and warms it up before any round
    flags = server_flags(args.variant)
    servers: dict[str, subprocess.Popen[bytes] | None] = {name: None for name in [*flags, "infinity", "infinity-onnx"]}
    ports = {name: free_port() for name in servers}
    for name, extra in flags.items():
        servers[name] = start_server(ports[name], args.backend, *extra)
    if args.baseline:
        ports["baseline"] = free_port()
        servers["baseline"] = start_server(ports["baseline"], args.backend, src=str(Path(args.baseline).resolve()))
    scratch = tempfile.TemporaryDirectory(prefix="sbert-infinity-onnx-")
    results: dict[tuple[str, int], list[dict]] = {}
    try:
        if args.infinity_python:
            start_peers(args.infinity_python, args.infinity_onnx, Path(scratch.name), servers, ports)
        for name, process in servers.items():  # a warm-up per server and scenario: rounds measure steady state
            for per, clients in SCENARIOS:
                if process is not None:
                    asyncio.run(load(ports[name], sentences, per, clients, WARM_UP_S))
        running = [(name, process) for name, process in servers.items() if process is not None]
        for turn in range(args.rounds):  # alternating servers and scenarios, so drift hits each alike
            for per, clients in SCENARIOS:
                # Each round starts one server later: a place in the order is no one server's (two copies of one
                # server, fixed in order, measured 1.06x and 1.13x offline in one run's 32-text rounds).
                for name, process in running[turn % len(running) :] + running[: turn % len(running)]:
                    grouped = args.grouped and not name.startswith("infinity")  # Infinity has no group metric
                    row = measure(process.pid, ports[name], sentences, per, clients, args.seconds, args.backend,
                                  grouped)  # fmt: skip
                    results.setdefault((name, per), []).append(row)
    finally:
        for process in servers.values():
            if process is not None:
                process.terminate()
                process.wait()
        scratch.cleanup()
    cpu = os.cpu_count()
    print(f"{MODEL}, backend {args.backend}, {cpu} cores shared by server and clients, {args.rounds} rounds x "
          f"{args.seconds:.0f} s (medians)")  # fmt: skip
    for (name, per), rows in sorted(results.items()):
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        ratios = ", ".join(f"{r['ratio']:.2f}" for r in rows)
        print(f"{name:>12} {per:>2} text(s)/request: {med['rate']:7.1f} texts/s, server CPU {med['cpu_ms']:.2f} ms/text"
              f" ({med['ratio']:.2f}x offline's {med['offline_ms']:.2f} over the same texts; rounds {ratios}), "
              f"p50 {med['p50']:.0f} ms, "
              f"p99 {med['p99']:.0f} ms, errors {sum(r['errors'] for r in rows)}")  # fmt: skip
        if "grouped_ratio" in med:
            ratios = ", ".join(f"{r['grouped_ratio']:.2f}" for r in rows)
            print(f"{'':>12} offline in the server's groups ({med['group']:.1f} texts): {med['grouped_ms']:.2f} "
                  f"ms/text, {med['shape_ratio']:.2f}x one call; server {med['grouped_ratio']:.2f}x it "
                  f"(rounds {ratios})")  # fmt: skip


if __name__ == "__main__":
    main()
