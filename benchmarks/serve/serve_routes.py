"""The same server through each client's API: /v1/embeddings (OpenAI), /embed (TEI), /v2/embed (Cohere), one run.

    python benchmarks/serve/serve_routes.py [--per-request 8] [--seconds 15] [--clients 32] [--rounds 3]

One `sbert serve` of all-MiniLM-L6-v2 on 127.0.0.1; --clients keep-alive connections post STS benchmark
test sentences (--per-request each, float vectors as JSON in every API) to one route for --seconds,
then the next route, round-robin for --rounds rounds, so drift hits each route alike. Reports each
route's median sentences per second and its ratio to /v1/embeddings (the issue's bar: within 5%).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from serve_load import MODEL, http_post, read_response, start_server

from common import sts_sentences

ROUTES = {
    "/v1/embeddings": lambda texts: {"input": texts, "model": MODEL, "encoding_format": "float"},
    "/embed": lambda texts: {"inputs": texts, "normalize": False},
    "/v2/embed": lambda texts: {"texts": texts, "model": MODEL, "embedding_types": ["float"]},
}


async def client(port: int, path: str, payloads: list[bytes], sizes: list[int], offset: int, until: float,
                 stats: dict) -> None:  # fmt: skip
    """One keep-alive connection posting to `path` until `until`; counts sentences answered 200."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    i = offset
    while time.monotonic() < until:
        k = i % len(payloads)
        writer.write(http_post(port, payloads[k], path))
        status, _ = await read_response(reader)
        if status == 200:
            stats["sentences"] += sizes[k]
        else:
            stats["errors"] += 1
        i += 1
    writer.close()


async def rate(port: int, path: str, sentences: list[str], per_request: int, clients: int, seconds: float) -> dict:
    """Sentences per second (and errors) of `clients` connections posting to `path` for `seconds`."""
    chunks = [sentences[s : s + per_request] for s in range(0, len(sentences), per_request)]
    payloads = [json.dumps(ROUTES[path](chunk)).encode() for chunk in chunks]
    stats = {"sentences": 0, "errors": 0}
    start, until = time.monotonic(), time.monotonic() + seconds
    await asyncio.gather(*(client(port, path, payloads, [len(c) for c in chunks], n * 7, until, stats)
                           for n in range(clients)))  # fmt: skip
    return {"rate": stats["sentences"] / (time.monotonic() - start), "errors": stats["errors"]}


def main() -> None:
    """Start the server, time each route round-robin, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-request", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=8791)
    args = parser.parse_args()
    sentences = sts_sentences("test")
    server = start_server(args.port, "torch")
    try:
        rates: dict[str, list[float]] = {path: [] for path in ROUTES}
        errors = 0
        for _ in range(args.rounds):
            for path in ROUTES:
                got = asyncio.run(rate(args.port, path, sentences, args.per_request, args.clients, args.seconds))
                rates[path].append(got["rate"])
                errors += got["errors"]
    finally:
        server.terminate()
        server.wait()
    base = statistics.median(rates["/v1/embeddings"])
    print(f"{args.clients} clients x {args.per_request} sentences per request, {args.rounds} rounds of "
          f"{args.seconds:.0f} s per route; errors: {errors}")  # fmt: skip
    for path, values in rates.items():
        median = statistics.median(values)
        print(f"{path:16} {median:8.1f} sentences/s  {median / base:5.3f}x /v1/embeddings  "
              f"(rounds: {', '.join(f'{v:.0f}' for v in values)})")  # fmt: skip


if __name__ == "__main__":
    main()
