"""Real `sbert serve` servers on 127.0.0.1 for the server tests, and small raw-HTTP helpers.

`serve_in_thread` runs the command's own app and uvicorn settings in a thread of the test process: a
real HTTP server on loopback, without importing torch and loading a model in a new process (seconds on a
quiet machine, many minutes on a loaded CI one). `start_server` starts a separate `sbert serve` process,
for what only a process shows: its exit status on SIGTERM, its memory.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np

from tests.cli_runner import ENV


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str
    log: Path

    def stop(self) -> bool:
        """SIGTERM, then True when the server shut down gracefully.

        uvicorn drains, then re-raises the signal so the exit status says SIGTERM (-15), as
        process supervisors expect; an unhandled crash would be another status.
        """
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait() in (0, -signal.SIGTERM)


@dataclass
class ThreadServer:
    """`sbert serve`'s app under uvicorn in a thread of this process."""

    server: object  # uvicorn.Server
    thread: threading.Thread
    url: str

    def stop(self) -> bool:
        """Ask uvicorn to drain and exit, then True when it did within 60 s."""
        self.server.should_exit = True  # type: ignore[attr-defined]
        self.thread.join(timeout=60)
        return not self.thread.is_alive()


def serve_in_thread(*flags: str | Path, timeout: float = 300.0) -> ThreadServer:
    """`sbert serve FLAGS` on a free loopback port, in a thread; waits for /health.

    Flags parse and check as on the command line, and a model that fails to load raises here.
    """

    from sbert.cli.main import build_parser
    from sbert.cli.serve import build_app

    port = free_port()
    args = build_parser().parse_args(["serve", "--port", str(port), "--device", "cpu", *map(str, flags)])
    app, settings = build_app(args)
    return run_app_in_thread(app, settings, timeout)


def run_app_in_thread(app: object, settings: object, timeout: float = 300.0) -> ThreadServer:
    """A built app (sbert.serve.server.build_server) under uvicorn in a thread, on settings' port; waits for /health."""
    import uvicorn

    from sbert.cli.serve import uvicorn_options

    port = settings.port  # type: ignore[attr-defined]
    server = uvicorn.Server(uvicorn.Config(app, **uvicorn_options(settings)))
    thread = threading.Thread(target=server.run, name=f"sbert-serve-{port}", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and thread.is_alive():
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return ThreadServer(server, thread, url)
        except httpx.TransportError:
            time.sleep(0.1)
    server.should_exit = True
    raise RuntimeError(f"in-thread server on port {port} not up in {timeout} s (alive: {thread.is_alive()})")


def served_vectors(server: Server | ThreadServer, texts: list[str], model: str) -> np.ndarray:
    """The float32 rows `POST /v1/embeddings` returns for `texts`, after asserting it answered 200."""
    response = httpx.post(f"{server.url}/v1/embeddings", json={"input": texts, "model": model}, timeout=60)
    body = response.json()
    assert response.status_code == 200, body
    return np.array([row["embedding"] for row in body["data"]], dtype=np.float32)


def start_server(log_dir: Path, *flags: str, timeout: float = 1500.0) -> Server:
    """Start `sbert serve` on a free loopback port and wait for /health.

    The wait is long because a loaded 2-core CI machine has taken minutes to import torch and load
    a model; a server that dies says so at once (its exit is checked on every poll).
    """
    port = free_port()
    log = log_dir / f"server-{port}.log"
    cmd = [sys.executable, "-m", "sbert.cli.main", "serve", "--port", str(port), "--device", "cpu", *flags]
    process = subprocess.Popen(cmd, env=ENV, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited {process.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return Server(process, url, log)
        except httpx.TransportError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError(f"server not up in {timeout} s: {log.read_text()[-2000:]}")


def raw_request(
    url: str, payload: bytes, headers: dict[str, str] | None = None, path: str = "/v1/embeddings"
) -> tuple[int, dict]:
    """POST raw bytes (malformed JSON included) and return (status, parsed JSON body)."""
    response = httpx.post(
        url + path, content=payload, headers={"Content-Type": "application/json", **(headers or {})}, timeout=60
    )
    return response.status_code, json.loads(response.content or b"{}")
