"""Attention grids widened to the CPU's float vector: the kernel alone, and MiniLM's packed forward.

    python benchmarks/speed/grid_width.py [--repeats 5] [--forward-only | --kernel-only]

One thread. Two measurements, each paired in this process (alternating, medians of `repeats`):
- kernel: SDPA as the CPU backend calls it on one bucket's grid (MiniLM's 12 heads of 64, about 480 tokens,
  one key masked off), for each width 4-33 and a few longer: at the sequences' own width, widened to the next
  multiple of 16 and of 8, and the faster side's ratio; what backends/grid_buckets.py's WIDEN_FROM rests on.
  Set ATEN_CPU_CAPABILITY=avx2 to measure the AVX2 kernels on an AVX-512 machine.
- forward: all-MiniLM-L6-v2's lean packed forward over random STS benchmark test sentences as a server's
  merged groups pack (8 and 32 a batch) and as offline encode's length-sorted batches (36 a batch), CPU
  microseconds a token with the grids widened (grid_width) and without, and the largest difference between
  their hidden states.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import torch
from torch.nn import functional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import cpu_facts, sts_sentences
from sbert import SentenceEncoder
from sbert.backends import grid_buckets
from sbert.backends.packing import PackedBatch, pack
from sbert.backends.torch_cpu import TorchCpuBackend

HEADS, HEAD_DIM, TOKENS = 12, 64, 480
WIDTHS = (*range(4, 34), 40, 44, 47, 60, 63)


def median_us(run: Callable[[], object], calls: int, repeats: int) -> float:
    """Median over `repeats` of the wall microseconds a call of `run` (one thread: wall is its CPU)."""
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        times.append((time.perf_counter() - start) * 1e6 / calls)
    return statistics.median(times)


def grid_call(width: int, grid: int) -> Callable[[], torch.Tensor]:
    """SDPA on a (rows, heads, grid, d) grid of sequences `width` long but the last row (one shorter), masked."""
    rows = max(2, TOKENS // width)
    packed = torch.randn(rows * grid, 3, HEADS, HEAD_DIM)
    q, k, v = (packed[:, i].view(rows, grid, HEADS, HEAD_DIM).transpose(1, 2) for i in range(3))
    lengths = torch.full((rows,), width)
    lengths[-1] -= 1
    mask = (torch.arange(grid)[None, :] < lengths[:, None])[:, None, None, :]
    return lambda: functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=HEAD_DIM**-0.5)


def kernel(repeats: int) -> None:
    """Print SDPA's microseconds a call by width: own, widened to 16, widened to 8."""
    print(f"SDPA on one bucket's grid, one thread, torch's {torch.backends.cpu.get_cpu_capability()} kernels")
    print("width | rows | own us | to 16 us | to 8 us | own / to 16 | own / to 8")
    with torch.inference_mode():
        for width in WIDTHS:
            grids = (width, -(-width // 16) * 16, -(-width // 8) * 8)
            us = [median_us(grid_call(width, g), 40, repeats) for g in grids]
            print(f"{width:>5} | {max(2, TOKENS // width):>4} | {us[0]:>6.0f} | {us[1]:>8.0f} | {us[2]:>7.0f} | "
                  f"{us[0] / us[1]:>10.2f}x | {us[0] / us[2]:>9.2f}x")  # fmt: skip


def batches(ids: list[list[int]], size: int, sort_all: bool) -> list[PackedBatch]:
    """Packed batches of `size` sentences: random groups (each sorted longest first), or the whole set sorted."""
    order = sorted(ids, key=len, reverse=True) if sort_all else ids
    return [pack(sorted(order[i : i + size], key=len, reverse=True)) for i in range(0, len(order), size)]


def forward(repeats: int) -> None:
    """Print the lean forward's microseconds a token with grids widened and not, by batch kind."""
    model = SentenceEncoder.load("all-MiniLM-L6-v2")
    backend = TorchCpuBackend(model.as_chain(), torch.device("cpu"))
    backend.packed_modules()
    lean = backend._lean
    assert lean is not None, "MiniLM should take the lean forward on this CPU"
    ids = [e.ids for e in model.fast_tokenizer().encode_batch(list(dict.fromkeys(sts_sentences())))]
    sample = random.Random(0).sample(ids, 576)
    kinds = {"server groups of 8": batches(sample, 8, False), "server groups of 32": batches(sample, 32, False),
             "offline, sorted, 36": batches(sample, 36, True)}  # fmt: skip
    tokens = sum(len(r) for r in sample)
    rule = grid_buckets.vector_rule()
    widen = {"own": lambda: None, "widened": lambda: rule}
    times: dict[tuple[str, str], list[float]] = {}
    print(f"all-MiniLM-L6-v2 lean forward, one thread, {cpu_facts()['cpu']}, rule {rule}; CPU us a token")
    with torch.inference_mode():
        hidden = {}
        for name, rule_of in widen.items():
            with mock.patch.object(grid_buckets, "vector_rule", rule_of):  # read at each batch's plan
                hidden[name] = torch.cat([lean(b) for b in kinds["server groups of 8"]])
        diff = float((hidden["own"] - hidden["widened"]).abs().max())
        for _ in range(repeats):
            for name, rule_of in widen.items():
                with mock.patch.object(grid_buckets, "vector_rule", rule_of):
                    for kind, runs in kinds.items():
                        start = time.thread_time()
                        for batch in runs:
                            lean(batch)
                        times.setdefault((kind, name), []).append((time.thread_time() - start) * 1e6 / tokens)
    for kind in kinds:
        own, wide = statistics.median(times[(kind, "own")]), statistics.median(times[(kind, "widened")])
        print(f"  {kind:>20}: own {own:6.1f}, widened {wide:6.1f}: {own / wide:.3f}x")
    print(f"  hidden states, widened against own: max |diff| {diff:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--forward-only", action="store_true")
    parser.add_argument("--kernel-only", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if not args.forward_only:
        kernel(args.repeats)
    if not args.kernel_only:
        forward(args.repeats)


if __name__ == "__main__":
    main()
