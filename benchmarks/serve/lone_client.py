"""One client sending one-text requests one after another: the server's latency when it has no company to wait for.

    python benchmarks/serve/lone_client.py [--requests 150] [--rounds 3] [--variant NAME=FLAGS ...]

Starts `sbert serve` (the default model, CPU) on 127.0.0.1, plus one server per --variant with other
`sbert serve` flags, and per round sends each server `--requests` one-text requests over one keep-alive
connection, each after the answer to the one before; prints each round's median latency (the first 10
requests of a round left out). An idle engine with one client starts each request at once: no wait for
company (serve/scheduler.py), so the median is the encode of one text plus the HTTP path.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_cpu import free_port, server_flags
from serve_load import MODEL, start_server


def median_ms(port: int, requests: int) -> float:
    """Median wall ms of `requests` sequential one-text requests (the first 10 left out)."""
    latency = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        for i in range(requests):
            start = time.perf_counter()
            answer = client.post("/v1/embeddings", json={"input": f"a short query number {i}", "model": MODEL})
            answer.raise_for_status()
            latency.append(time.perf_counter() - start)
    return 1000 * statistics.median(latency[10:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=FLAGS")
    args = parser.parse_args()
    flags = server_flags(args.variant)
    ports = {name: free_port() for name in flags}
    servers = {name: start_server(ports[name], args.backend, *extra) for name, extra in flags.items()}
    try:
        for _ in range(args.rounds):  # alternating servers, so drift hits each alike
            for name in servers:
                print(f"{name:>12}: {median_ms(ports[name], args.requests):.2f} ms median", flush=True)
    finally:
        for process in servers.values():
            process.terminate()


if __name__ == "__main__":
    main()
