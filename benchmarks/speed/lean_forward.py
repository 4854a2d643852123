"""A packed BERT forward through transformers' modules against the lean forward of the same weights.

    python benchmarks/speed/lean_forward.py [--repeats 7] [--groups 24] [--matrices]

all-MiniLM-L6-v2 on one thread (a serving lane's core), random STS benchmark test sentences packed as
the CPU backend packs a server's merged group. For each group size (1, 8, 16, 32 sentences): CPU ms a
forward (thread CPU time, median of `repeats` alternating passes over the same `groups` groups) of
the modules' packed forward (`packed_chain.packed_token_embeddings`), of `lean_bert.LeanBert` with its
projections on torch's `linear` (as with SBERT_CPU_MATMUL=linear) and of the shipped lean forward
(oneDNN's prepacked projections where torch has them), the modules' time over each, and the largest
difference of each lean forward's hidden states from the modules'. All run in this process,
interleaved, so the machine's drift hits them alike; the ratios are the figures, not the milliseconds.

--matrices: instead, one layer's four projections (MiniLM's shapes, random values) at 8 to 1,792 rows:
torch's `linear` (a Linear's call) and oneDNN's prepacked call (the two engines of
backends/projections.py), alternating, median CPU microseconds of the four, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from unittest import mock

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import cpu_facts, sts_sentences
from sbert import SentenceEncoder
from sbert.backends import varlen
from sbert.backends.lean_bert import LeanBert
from sbert.backends.packed_chain import packed_token_embeddings
from sbert.backends.packing import pack
from sbert.backends.projections import MATMUL_ENV, OneDnnProjection, onednn_usable, projection
from sbert.backends.torch_cpu import TorchCpuBackend
from sbert.modules import Transformer

T = TypeVar("T")
SIZES = (1, 8, 16, 32)
MATRIX_ROWS = (8, 14, 28, 56, 112, 168, 224, 448, 896, 1792)
LAYER_SHAPES = ((384, 1152), (384, 384), (384, 1536), (1536, 384))  # (in, out): fused qkv, out, up, down


def thread_ms(run: Callable[[T], object], batches: list[T]) -> float:
    """CPU ms of this thread a call of `run` over `batches`."""
    start = time.thread_time()
    for batch in batches:
        run(batch)
    return (time.thread_time() - start) * 1e3 / len(batches)


def layer_engines(rows: int) -> dict[str, Callable[[None], object]]:
    """One layer's four projections at `rows` rows, as each engine multiplies them (random MiniLM shapes)."""
    inputs = [torch.randn(rows, k) for k, _ in LAYER_SHAPES]
    weights = [(torch.randn(n, k) * k**-0.5, torch.randn(n)) for k, n in LAYER_SHAPES]
    engines: dict[str, Callable[[None], object]] = {
        "linear": lambda _: [torch.nn.functional.linear(x, w, b) for x, (w, b) in zip(inputs, weights, strict=True)],
    }
    if onednn_usable(torch.float32):
        onednn = [projection(w, b) for w, b in weights]
        assert all(isinstance(p, OneDnnProjection) for p in onednn)
        engines["onednn"] = lambda _: [p(x) for x, p in zip(inputs, onednn, strict=True)]
    return engines


def matrices(repeats: int) -> None:
    """Print one layer's projections through each engine, by row count."""
    print(f"one layer's projections (MiniLM shapes), one thread, {cpu_facts()['cpu']}")
    print("rows | linear us | onednn us | linear / onednn")
    with torch.inference_mode():
        for rows in MATRIX_ROWS:
            engines = layer_engines(rows)
            passes = max(5, 20000 // rows)
            times: dict[str, list[float]] = {name: [] for name in engines}
            for _ in range(repeats):
                for name, run in engines.items():
                    times[name].append(thread_ms(run, [None] * passes) * 1e3)
            us = {name: statistics.median(t) for name, t in times.items()}
            onednn = us.get("onednn", float("nan"))
            print(f"{rows:>4} | {us['linear']:>9.0f} | {onednn:>9.0f} | {us['linear'] / onednn:.3f}x")


def linear_lean(model: object) -> LeanBert:
    """The lean forward with every projection on torch's `linear` (as SBERT_CPU_MATMUL=linear builds it)."""
    with mock.patch.dict(os.environ, {MATMUL_ENV: "linear"}):  # read when the projections are built
        return LeanBert(model, varlen.KERNELS["grid"])


def forwards(args: argparse.Namespace) -> None:
    """Print the modules' packed forward against both lean forwards, by group size."""
    model = SentenceEncoder.load("all-MiniLM-L6-v2")
    backend = TorchCpuBackend(model.as_chain(), torch.device("cpu"))
    packed = backend.packed_modules()
    assert packed is not None and isinstance(packed[0], Transformer), "MiniLM should pack on the CPU"
    transformer = packed[0]
    runs: dict[str, Callable] = {
        "modules": lambda b: packed_token_embeddings(transformer, b),
        "lean-linear": linear_lean(transformer.auto_model),
        "lean": LeanBert(transformer.auto_model, varlen.KERNELS["grid"]),
    }
    ids = [e.ids for e in model.fast_tokenizer().encode_batch(list(dict.fromkeys(sts_sentences())))]
    rng = random.Random(0)
    print(f"all-MiniLM-L6-v2, one thread, {cpu_facts()['cpu']}; lean on oneDNN: {onednn_usable(torch.float32)}")
    columns = ("sentences", "tokens", "modules ms", "lean-linear ms", "lean ms", "modules / lean-linear",
               "modules / lean", "max |diff|")  # fmt: skip
    print(" | ".join(columns))
    with torch.inference_mode():
        for size in SIZES:
            # longest first, as the backend sorts a batch before it packs it
            batches = [pack(sorted(rng.sample(ids, size), key=len, reverse=True)) for _ in range(args.groups)]
            diff = max(float((runs[name](b) - runs["modules"](b)).abs().max()) for b in batches[:4] for name in runs)
            times: dict[str, list[float]] = {name: [] for name in runs}
            for _ in range(args.repeats):
                for name, run in runs.items():
                    times[name].append(thread_ms(run, batches))
            ms = {name: statistics.median(t) for name, t in times.items()}
            tokens = statistics.mean(int(b.input_ids.shape[0]) for b in batches)
            mod, linear, lean = ms["modules"], ms["lean-linear"], ms["lean"]
            print(f"{size:>9} | {tokens:>6.0f} | {mod:>10.2f} | {linear:>14.2f} | {lean:>7.2f} | "
                  f"{mod / linear:>20.3f}x | {mod / lean:>13.3f}x | {diff:.1e}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--groups", type=int, default=24, help="random groups per size")
    parser.add_argument("--matrices", action="store_true", help="one layer's projections by engine instead")
    args = parser.parse_args()
    torch.set_num_threads(1)
    matrices(args.repeats) if args.matrices else forwards(args)


if __name__ == "__main__":
    main()
