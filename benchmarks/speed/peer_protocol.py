"""The line protocol between benchmarks/speed/decoder_speed.py and a peer engine running in its own venv.

The peer is started as `PEER_PYTHON SCRIPT serve MODEL TEXTS.json` and answers lines on stdin:
"ready" once loaded, then for "embed OUT.npy" the seconds its own embed call took (the unit vectors
saved to OUT), for "warm X" a "0" after one untimed call on the first 32 texts, and for any other
op the peer's own handler's "0". `SCRIPT peak MODEL TEXTS.json` loads, embeds once and prints its
VmHWM in GiB. Only json, numpy and the standard library are imported here: the peer venvs have
no sbert and no torch of ours.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

Embed = Callable[[list[str]], np.ndarray]  # texts -> unit vectors (n, dim)
WARM_TEXTS = 32


def serve(texts_file: Path, embed: Embed, other: Callable[[str, str, list[str]], None] | None = None) -> None:
    """Answer the protocol's lines until stdin ends; `other(op, argument, texts)` takes the ops beyond embed / warm."""
    texts = json.loads(texts_file.read_text())
    print("ready", flush=True)
    for line in sys.stdin:
        op, argument = line.split()
        if op == "embed":
            start = time.perf_counter()
            vectors = np.asarray(embed(texts), dtype=np.float32)
            seconds = time.perf_counter() - start
            np.save(argument, vectors)
            print(f"{seconds:.6f}", flush=True)
            continue
        if op == "warm":
            embed(texts[:WARM_TEXTS])
        elif other is not None:
            other(op, argument, texts)
        else:
            raise SystemExit(f"unknown peer op {op!r}")
        print("0", flush=True)


def print_peak(texts_file: Path, embed: Embed) -> None:
    """Embed the texts once, then print this process's resident high-water mark (GiB)."""
    embed(json.loads(texts_file.read_text()))
    status = Path("/proc/self/status").read_text().splitlines()
    print(next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 2**20)
