"""A packed BERT forward through transformers' modules against the lean forward of the same weights.

    python benchmarks/speed/lean_forward.py [--repeats 7] [--groups 24]

all-MiniLM-L6-v2 on one thread (a serving lane's core), random STS benchmark test sentences packed as
the CPU backend packs a server's merged group. For each group size (1, 8, 16, 32 sentences): CPU ms a
forward (thread CPU time, median of `repeats` alternating passes over the same `groups` groups) of
the modules' packed forward (`packed_chain.packed_token_embeddings`) and of `lean_bert.LeanBert`, their
ratio, and the largest difference of their hidden states. Both run in this process, interleaved, so the
machine's drift hits both alike; the ratio is the figure, not the milliseconds.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import cpu_facts, sts_sentences
from sbert import SentenceEncoder
from sbert.backends import varlen
from sbert.backends.lean_bert import LeanBert
from sbert.backends.packed_chain import packed_token_embeddings
from sbert.backends.packing import PackedBatch, pack
from sbert.backends.torch_cpu import TorchCpuBackend
from sbert.modules import Transformer

SIZES = (1, 8, 16, 32)


def thread_ms(run: Callable[[PackedBatch], object], batches: list[PackedBatch]) -> float:
    """CPU ms of this thread a forward over `batches`."""
    start = time.thread_time()
    for batch in batches:
        run(batch)
    return (time.thread_time() - start) * 1e3 / len(batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--groups", type=int, default=24, help="random groups per size")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = SentenceEncoder.load("all-MiniLM-L6-v2")
    backend = TorchCpuBackend(model.as_chain(), torch.device("cpu"))
    packed = backend.packed_modules()
    assert packed is not None and isinstance(packed[0], Transformer), "MiniLM should pack on the CPU"
    transformer = packed[0]
    lean = LeanBert(transformer.auto_model, varlen.KERNELS["grid"])
    ids = [e.ids for e in model.fast_tokenizer().encode_batch(list(dict.fromkeys(sts_sentences())))]
    rng = random.Random(0)
    print(f"all-MiniLM-L6-v2, one thread, {cpu_facts()['cpu']}")
    print("sentences | tokens | modules ms | lean ms | modules / lean (passes) | max |diff|")
    with torch.inference_mode():
        for size in SIZES:
            # longest first, as the backend sorts a batch before it packs it
            batches = [pack(sorted(rng.sample(ids, size), key=len, reverse=True)) for _ in range(args.groups)]
            diff = max(float((lean(b) - packed_token_embeddings(transformer, b)).abs().max()) for b in batches[:4])
            runs = {"modules": lambda b: packed_token_embeddings(transformer, b), "lean": lean}
            times: dict[str, list[float]] = {name: [] for name in runs}
            for _ in range(args.repeats):
                for name, run in runs.items():
                    times[name].append(thread_ms(run, batches))
            ratios = [m / x for m, x in zip(times["modules"], times["lean"], strict=True)]
            tokens = statistics.mean(int(b.input_ids.shape[0]) for b in batches)
            spread = f"{statistics.median(ratios):.3f}x ({min(ratios):.2f}-{max(ratios):.2f})"
            modules_ms, lean_ms = statistics.median(times["modules"]), statistics.median(times["lean"])
            print(f"{size:>9} | {tokens:>6.0f} | {modules_ms:>10.2f} | {lean_ms:>7.2f} | {spread} | {diff:.1e}")


if __name__ == "__main__":
    main()
