"""Load and faults against `sbert serve` on 127.0.0.1: throughput vs offline encode, latency, errors, RSS.

64 concurrent keep-alive clients post STS benchmark test sentences (--per-request each, base64
as the OpenAI client asks) for --seconds; the same sentences are encoded offline in this process
first (median of 3) with the same backend. Then a fault phase: 1 MB bodies, malformed JSON, a
client that trickles its request, clients that vanish mid-request, all while 16 clients keep
posting; their errors and latency are reported. Server RSS is read at start and after each phase.

    python benchmarks/serve/serve_load.py [--backend torch] [--per-request 8] [--seconds 30] [--clients 64] [--rounds 4]

With --rerank DIR (a cross-encoder folder) the clients post /v1/rerank instead: a query and
--per-request documents each, drawn from the same sentences; throughput is pairs scored per
second, against offline `CrossEncoder.rank` of the same requests one after another and against
one `predict` call over all their pairs (median of 3 each). No fault phase in this mode (the
hardening tests cover /v1/rerank).

    python benchmarks/serve/serve_load.py --rerank /tmp/sbert-reranker --per-request 20 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import ROOT, sts_sentences

MODEL = "all-MiniLM-L6-v2"


@functools.cache
def offline_model() -> Any:
    """The default model, loaded once per process: serve_cpu.py measures offline encode after every window."""
    from sbert import SentenceEncoder

    return SentenceEncoder.load(MODEL)


def offline_seconds(
    sentences: list[str], backend: str, clock: Callable[[], float] = time.perf_counter, repeats: int = 3,
    group: int | None = None,
) -> float:  # fmt: skip
    """Seconds by `clock` (wall, or this process's CPU) of in-process encode of all the sentences (median).

    One call, or with `group` calls of that many sentences in order (a server's merged groups).
    """
    model = offline_model()
    model.encode(sentences[: group or 64], backend=backend, show_progress=False)
    step = group or len(sentences)
    times = []
    for _ in range(repeats):
        start = clock()
        for i in range(0, len(sentences), step):
            model.encode(sentences[i : i + step], backend=backend, show_progress=False)
        times.append(clock() - start)
    return statistics.median(times)


def offline_rate(sentences: list[str], backend: str) -> float:
    """Sentences per second of in-process encode (median of 3, after a warm-up)."""
    return len(sentences) / offline_seconds(sentences, backend)


def offline_rerank_rates(payloads: list[bytes], folder: str, backend: str) -> tuple[float, float]:
    """Pairs per second of offline rank, request by request, and of one predict over every pair (medians of 3)."""
    from sbert.reranker.model import CrossEncoder

    model = CrossEncoder.load(folder)
    requests = [json.loads(p) for p in payloads]
    pairs = [(r["query"], d) for r in requests for d in r["documents"]]
    model.predict(pairs[:64], backend=backend)
    ranked, whole = [], []
    for _ in range(3):
        start = time.perf_counter()
        for r in requests:
            model.rank(r["query"], r["documents"], backend=backend)
        ranked.append(time.perf_counter() - start)
        start = time.perf_counter()
        model.predict(pairs, backend=backend, show_progress=False)
        whole.append(time.perf_counter() - start)
    return len(pairs) / statistics.median(ranked), len(pairs) / statistics.median(whole)


# Requests take the sentences in a fixed random order. The STS test file runs by genre (its first 230 sentences
# average 9.8 tokens against 14.2 for the file): taken in file order, a short window's requests were a subset
# unlike the whole (a one-text window's texts cost 0.7x the file's average offline), and a faster server went
# further into the file.
ORDER_SEED = 0


def shuffled(sentences: list[str]) -> list[str]:
    """The sentences in the load's fixed random order."""
    return random.Random(ORDER_SEED).sample(sentences, len(sentences))


def rerank_bodies(sentences: list[str], per_request: int) -> list[bytes]:
    """Rerank requests: in the fixed random order (shuffled), sentence i queries the per_request sentences after it."""
    order, step = shuffled(sentences), per_request + 1
    return [json.dumps({"query": order[i], "documents": order[i + 1 : i + step]}).encode()
            for i in range(0, len(order) - step, step)]  # fmt: skip


# A server's extra word that sets an environment variable rather than a flag ("MALLOC_ARENA_MAX=4").
ENV_WORD = re.compile(r"[A-Z][A-Z0-9_]*=")


def start_server(port: int, backend: str, *extra: str, src: str | None = None) -> subprocess.Popen[bytes]:
    """`sbert serve` on 127.0.0.1:`port`, once it answers; `src`: the sbert of another checkout's src/ folder.

    `extra`: more `sbert serve` flags, and NAME=VALUE words for the server's environment.
    """
    cmd = [sys.executable, "-m", "sbert.cli.main", "serve", "--model", MODEL, "--backend", backend, "--port", str(port),
           *(word for word in extra if not ENV_WORD.match(word))]  # fmt: skip
    env = os.environ | dict(word.split("=", 1) for word in extra if ENV_WORD.match(word))
    env |= {"PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])} if src else {}
    process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return answering(process, port, "server", 120.0)


def answering(process: subprocess.Popen[bytes], port: int, what: str, seconds: float) -> subprocess.Popen[bytes]:
    """`process` once it answers an embedding request on `port`; killed, and the run stopped, after `seconds`."""
    for _ in range(int(seconds / 0.2)):
        try:
            asyncio.run(request_once(port, b'{"input": "up?", "model": "%s"}' % MODEL.encode()))
            return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"{what} did not start")


def http_post(port: int, body: bytes, path: str = "/v1/embeddings") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
    return head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next(
        int(line.split(b":")[1]) for line in head.lower().split(b"\r\n") if line.startswith(b"content-length")
    )
    return status, await reader.readexactly(length)


async def request_once(port: int, body: bytes) -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(http_post(port, body))
    try:
        return await read_response(reader)
    finally:
        writer.close()


def bodies(sentences: list[str], per_request: int) -> list[bytes]:
    """Request bodies through the sentences in the fixed random order (shuffled), per_request texts each."""
    order = shuffled(sentences)
    out = []
    for start in range(0, len(order), per_request):
        texts = order[start : start + per_request]
        out.append(json.dumps({"input": texts, "model": MODEL, "encoding_format": "base64"}).encode())
    return out


async def client(port: int, payloads: list[bytes], counts: list[int], offset: int, until: float, stats: dict,
                 path: str = "/v1/embeddings") -> None:  # fmt: skip
    """One keep-alive connection posting until `until`; records latency, sentences (or pairs) and errors."""
    key = b'"relevance_score":' if path == "/v1/rerank" else b'"embedding":'  # not "object":"embedding"
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    i = offset
    while time.monotonic() < until:
        k = i % len(payloads)
        started = time.monotonic()
        writer.write(http_post(port, payloads[k], path))
        try:
            status, body = await read_response(reader)
        except (OSError, asyncio.IncompleteReadError):
            stats["errors"] += 1
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            continue
        stats["latency"].append(time.monotonic() - started)
        if status == 200 and body.count(key) == counts[k]:
            stats["sentences"] += counts[k]
            stats["served"].append(k)
        else:
            stats["errors"] += 1
        i += 1
    writer.close()


async def load(port: int, sentences: list[str], per_request: int, clients: int, seconds: float,
               rerank: bool = False) -> dict:  # fmt: skip
    """`clients` keep-alive clients posting for `seconds`: latency, texts (or pairs) served, errors and what was served.

    stats["texts"] holds the input texts of every request answered in full (a text once per time served),
    so a reference can encode exactly what the server did; empty with `rerank`.
    """
    payloads = (rerank_bodies if rerank else bodies)(sentences, per_request)
    inputs = [json.loads(p)["documents" if rerank else "input"] for p in payloads]
    counts = [len(texts) for texts in inputs]
    stats: dict = {"latency": [], "sentences": 0, "errors": 0, "served": []}
    until = time.monotonic() + seconds
    started = time.monotonic()
    path = "/v1/rerank" if rerank else "/v1/embeddings"
    # Clients start spread over the requests, so a short window still draws from all of them.
    starts = [c * len(payloads) // clients for c in range(clients)]
    await asyncio.gather(*(client(port, payloads, counts, start, until, stats, path) for start in starts))
    stats["seconds"] = time.monotonic() - started
    stats["texts"] = [] if rerank else [t for k in stats["served"] for t in inputs[k]]
    return stats


async def faults(port: int) -> dict[str, str]:
    """Each misbehaving client once; what the server answered."""
    seen: dict[str, str] = {}
    big = json.dumps({"input": ["word " * 200] * 1000, "model": MODEL}).encode()
    seen["1 MB body"] = str((await request_once(port, big))[0])
    seen["malformed JSON"] = str((await request_once(port, b'{"input": ["a", '))[0])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = http_post(port, json.dumps({"input": ["slow"], "model": MODEL}).encode())
    for i in range(0, len(request), 8):  # trickled over ~5 s
        writer.write(request[i : i + 8])
        await asyncio.sleep(5 / (len(request) / 8))
    seen["slow client"] = str((await read_response(reader))[0])
    writer.close()
    for _ in range(20):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(http_post(port, json.dumps({"input": ["gone"] * 32, "model": MODEL}).encode()))
        await writer.drain()
        writer.close()  # vanishes before the answer
    seen["20 vanishing clients"] = "dropped"
    return seen


async def fault_phase(port: int, sentences: list[str], per_request: int) -> tuple[dict, dict]:
    background = asyncio.create_task(load(port, sentences, per_request, 16, 12))
    seen = await faults(port)
    return await background, seen


def summary(name: str, stats: dict, offline: float | None = None) -> str:
    lat = sorted(stats["latency"])
    rate = stats["sentences"] / stats["seconds"]
    ratio = f" = {rate / offline:.2f}x offline" if offline else ""
    p50, p99 = lat[len(lat) // 2] * 1000, lat[int(len(lat) * 0.99)] * 1000
    return (f"{name}: {rate:.1f} sent/s{ratio}; {len(lat)} requests, p50 {p50:.0f} ms, p99 {p99:.0f} ms, "
            f"errors {stats['errors']}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--per-request", type=int, default=8)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--port", type=int, default=18431)
    parser.add_argument("--rounds", type=int, default=4, help="load rounds (the fault phase follows the first)")
    parser.add_argument("--rerank", help="a cross-encoder folder: load /v1/rerank instead of /v1/embeddings")
    args = parser.parse_args()
    sentences = sts_sentences("test")
    if args.rerank:
        rerank_load(args, sentences)
        return
    offline = offline_rate(sentences, args.backend)
    print(f"offline encode ({args.backend}, {len(sentences)} sentences): {offline:.1f} sent/s")
    server = start_server(args.port, args.backend)
    proc = psutil.Process(server.pid)
    rss = [proc.memory_info().rss]
    try:
        stats = asyncio.run(load(args.port, sentences, args.per_request, args.clients, args.seconds))
        rss.append(proc.memory_info().rss)
        print(summary(f"{args.clients} clients x {args.per_request} sentences/request", stats, offline))
        background, seen = asyncio.run(fault_phase(args.port, sentences, args.per_request))
        rss.append(proc.memory_info().rss)
        print("faults: " + "; ".join(f"{k} -> {v}" for k, v in seen.items()))
        print(summary("16 clients during the faults", background, offline))
        for round_no in range(2, args.rounds + 1):  # more rounds: does RSS keep growing or settle?
            again = asyncio.run(load(args.port, sentences, args.per_request, args.clients, args.seconds))
            rss.append(proc.memory_info().rss)
            print(summary(f"load round {round_no}", again, offline))
    finally:
        server.terminate()
        code = server.wait(timeout=60)
    print("server RSS MB at start / after round 1 / after faults / after each later round: "
          + " / ".join(f"{r / 2**20:.0f}" for r in rss) + f"; exit status after SIGTERM {code}")  # fmt: skip


def rerank_load(args: argparse.Namespace, sentences: list[str]) -> None:
    """/v1/rerank under --clients clients, against offline rank and one offline predict, in pairs per second."""
    ranked, whole = offline_rerank_rates(rerank_bodies(sentences, args.per_request), args.rerank, args.backend)
    print(f"offline ({args.backend}): rank request by request {ranked:.1f} pairs/s; one predict {whole:.1f} pairs/s")
    server = start_server(args.port, args.backend, "--reranker", args.rerank)
    try:
        for round_no in range(1, args.rounds + 1):
            stats = asyncio.run(load(args.port, sentences, args.per_request, args.clients, args.seconds, rerank=True))
            print(summary(f"rerank round {round_no}, {args.clients} clients x {args.per_request} documents", stats,
                          ranked).replace("sent/s", "pairs/s").replace("x offline", "x offline rank")
                  + f", {stats['sentences'] / stats['seconds'] / whole:.2f}x one offline predict")  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
