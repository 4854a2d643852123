"""A real `sbert serve` process on 127.0.0.1 for the server tests, and small raw-HTTP helpers."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


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


def served_vectors(server: Server, texts: list[str], model: str) -> np.ndarray:
    """The float32 rows `POST /v1/embeddings` returns for `texts`, after asserting it answered 200."""
    response = httpx.post(f"{server.url}/v1/embeddings", json={"input": texts, "model": model}, timeout=60)
    body = response.json()
    assert response.status_code == 200, body
    return np.array([row["embedding"] for row in body["data"]], dtype=np.float32)


def start_server(log_dir: Path, *flags: str, timeout: float = 600.0) -> Server:
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
