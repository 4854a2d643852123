"""What a one-text embedding request costs a Python server apart from the model: two bare floors beside sbert's.

    python benchmarks/serve/request_floor.py [--seconds 8] [--rounds 3] [--model-ms 35]

serve_cpu.py's load (16 keep-alive clients, one STS benchmark test sentence a request) on three servers in
turn, each round, on 127.0.0.1:
- `protocol`: an asyncio Protocol on uvloop parsing with httptools, about the least a Python HTTP server
  does: parse the request, read its JSON, and answer OpenAI's embedding shape with a fixed 384-float vector
  after `--model-ms` (a timer standing in for the model, so requests arrive at a loaded server's rate);
- `asgi`: the same answer from a bare ASGI app under uvicorn (httptools, uvloop): what uvicorn's request
  cycle and the ASGI calls add;
- `sbert`: `sbert serve` with the default model, its event-loop thread alone (HTTP, checks, counting the
  request's tokens, scheduling, JSON, sending).
Each figure is CPU microseconds a request (user + system) of that server process, or of sbert's loop thread,
over one window after a warm-up; the medians over the rounds, and the requests a second.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_cpu import free_port, tree_cpu
from serve_load import answering, load, start_server

from common import sts_sentences

WIDTH = 384  # MiniLM's vector


def answer_body(request: bytes) -> bytes:
    """OpenAI's embedding answer for a one-text request, the vector fixed (orjson on a NumPy row, as sbert does)."""
    import numpy as np
    import orjson

    model = orjson.loads(request)["model"]
    vector = np.linspace(-1.0, 1.0, WIDTH, dtype=np.float32)
    data = [{"object": "embedding", "index": 0, "embedding": vector}]
    usage = {"prompt_tokens": 12, "total_tokens": 12}
    return orjson.dumps({"object": "list", "data": data, "model": model, "usage": usage},
                        option=orjson.OPT_SERIALIZE_NUMPY)  # fmt: skip


def serve_protocol(port: int, delay: float) -> None:
    """The bare asyncio Protocol server (runs until killed)."""
    import httptools
    import uvloop

    class Bare(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.transport, self.parser, self.body = transport, httptools.HttpRequestParser(self), bytearray()

        def data_received(self, data: bytes) -> None:
            self.parser.feed_data(data)

        def on_body(self, body: bytes) -> None:
            self.body += body

        def on_message_complete(self) -> None:
            request, self.body = bytes(self.body), bytearray()
            asyncio.get_running_loop().call_later(delay, self.answer, request)

        def answer(self, request: bytes) -> None:
            out = answer_body(request)
            head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(out)
            self.transport.write(head + out)

    async def run() -> None:
        server = await asyncio.get_running_loop().create_server(Bare, "127.0.0.1", port)
        await server.serve_forever()

    uvloop.run(run())


def serve_asgi(port: int, delay: float) -> None:
    """The bare ASGI app under uvicorn (runs until killed)."""
    import uvicorn

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        await asyncio.sleep(delay)
        out = answer_body(body)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(out)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": out})

    uvicorn.run(app, host="127.0.0.1", port=port, http="httptools", loop="uvloop", lifespan="off",
                access_log=False, log_level="warning")  # fmt: skip


def start_bare(kind: str, port: int, delay: float) -> subprocess.Popen[bytes]:
    """One of the bare servers in a process of its own, once it answers."""
    cmd = [sys.executable, __file__, "--serve", kind, "--port", str(port), "--model-ms", str(delay * 1000)]
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return answering(process, port, f"the {kind} server", 20.0)


def loop_thread_cpu(pid: int) -> float:
    """User + system seconds of a process's main thread (sbert's event loop)."""
    return next(t.user_time + t.system_time for t in psutil.Process(pid).threads() if t.id == pid)


def window(pid: int, port: int, sentences: list[str], seconds: float, loop_only: bool) -> tuple[float, float]:
    """(CPU microseconds a request, requests a second) over one window after a 2 s warm-up."""
    cpu = (lambda: loop_thread_cpu(pid)) if loop_only else (lambda: tree_cpu(pid))
    asyncio.run(load(port, sentences, 1, 16, 2.0))
    before = cpu()
    stats = asyncio.run(load(port, sentences, 1, 16, seconds))
    used, served = cpu() - before, len(stats["texts"])
    return used / max(1, served) * 1e6, served / stats["seconds"]


def main() -> None:
    """Run the three servers in turn each round; print each window, then the medians."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model-ms", type=float, default=35.0, help="the bare servers' stand-in for the model")
    parser.add_argument("--serve", choices=("protocol", "asgi"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        (serve_protocol if args.serve == "protocol" else serve_asgi)(args.port, args.model_ms / 1000)
        return
    sentences = list(dict.fromkeys(sts_sentences()))
    ports = {name: free_port() for name in ("protocol", "asgi", "sbert")}
    servers = {"protocol": start_bare("protocol", ports["protocol"], args.model_ms / 1000),
               "asgi": start_bare("asgi", ports["asgi"], args.model_ms / 1000),
               "sbert": start_server(ports["sbert"], "torch")}  # fmt: skip
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    try:
        for index in range(args.rounds):
            for name, server in servers.items():
                figures[name].append(window(server.pid, ports[name], sentences, args.seconds, name == "sbert"))
                print(f"round {index} {name}: {figures[name][-1][0]:.0f} us a request, {figures[name][-1][1]:.0f}/s")
    finally:
        for server in servers.values():
            server.kill()
    for name, runs in figures.items():
        what = "its event loop thread" if name == "sbert" else "the whole server"
        print(f"{name}: {statistics.median(r[0] for r in runs):.0f} us a request ({what}), "
              f"{statistics.median(r[1] for r in runs):.0f} requests/s")  # fmt: skip


if __name__ == "__main__":
    main()
