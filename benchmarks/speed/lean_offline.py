"""Offline encode through the lean packed forward against the padded modules, the same model and texts.

    python benchmarks/speed/lean_offline.py [--repeats 5]

all-MiniLM-L6-v2 on the CPU backend (both cores), one `encode` call over the STS benchmark test sentences
(length-sorted batches, little padding), three ways in turn in this process: the shipped path (every batch
packed through lean_bert's forward, its projections on oneDNN where torch has it), the same with torch's
`linear` for projections (SBERT_CPU_MATMUL=linear's lean forward) and every batch padded through the modules
(the path of a model the lean forward does not cover). Prints this process's CPU ms a text (median of
`repeats` alternating passes), each way's time over the shipped path's, and the largest difference of its
vectors from the padded modules'.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from lean_forward import linear_lean

from common import cpu_facts, sts_sentences
from sbert import SentenceEncoder
from sbert.backends.torch_cpu import TorchCpuBackend


def ways(backend: TorchCpuBackend) -> dict[str, Callable[[], None]]:
    """Set-ups of the backend for each way, by name: the shipped lean, lean on `linear`, the padded modules."""
    packed = backend.packed_modules()
    shipped = backend._lean
    assert packed is not None and shipped is not None, "MiniLM should take the lean forward on the CPU"
    lean_linear = linear_lean(packed[0].auto_model)  # type: ignore[attr-defined]

    def use(lean: Callable | None) -> Callable[[], None]:
        def set_up() -> None:
            backend._lean = lean  # without one, a length-sorted batch runs padded (TorchCpuBackend.embed)

        return set_up

    return {"lean": use(shipped), "lean-linear": use(lean_linear), "padded": use(None)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    model = SentenceEncoder.load("all-MiniLM-L6-v2")
    sentences = sts_sentences()
    model.encode(sentences[:64])
    backend = model.backend("torch")
    assert isinstance(backend, TorchCpuBackend)
    set_ups = ways(backend)
    times: dict[str, list[float]] = {name: [] for name in set_ups}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.repeats):
        for name, set_up in set_ups.items():
            set_up()
            start = time.process_time()
            vectors[name] = model.encode(sentences, show_progress=False)
            times[name].append((time.process_time() - start) * 1e3 / len(sentences))
    set_ups["lean"]()
    ms = {name: statistics.median(t) for name, t in times.items()}
    print(f"all-MiniLM-L6-v2, {len(sentences)} STS test sentences, one encode call, {cpu_facts()['cpu']}")
    print("way | CPU ms a text | over lean | max |diff| to padded")
    for name, value in ms.items():
        diff = float(np.abs(vectors[name] - vectors["padded"]).max())
        print(f"{name} | {value:.3f} | {value / ms['lean']:.3f}x | {diff:.1e}")


if __name__ == "__main__":
    main()
