"""Packed attention on the CPU: one grid as wide as the longest sentence against one grid per length bucket.

    python benchmarks/speed/grid_attention.py [--group 64] [--rounds 3]

A server merges concurrent requests into groups of random sentences; the CPU backend plans each group's
batches longest first and runs a batch packed when over 10% of it would be padding. This script builds
such batches from STS benchmark test sentences (random groups of `--group`, planned as the server's
encode plans them), runs all-MiniLM-L6-v2's packed forward on one thread under torch's profiler with each
attention, and prints the share of CPU in attention and in the index, fill and copy ops around it, beside
offline's length-sorted batches. Shares within one profile, not timings across runs: this machine's
speed drifts by more than the difference.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import torch
from torch import Tensor
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import sts_sentences
from sbert import SentenceEncoder
from sbert.backends import varlen
from sbert.backends.torch_cpu import TorchCpuBackend, per_core
from sbert.encoding.engine import plan_batches

ATTENTION = "aten::_scaled_dot_product_flash_attention_for_cpu"
AROUND = ("aten::_index_put_impl_", "aten::index", "aten::index_copy_", "aten::index_select", "aten::fill_",
          "aten::copy_")  # fmt: skip


def one_grid(
    q: Tensor, k: Tensor, v: Tensor, cu: Tensor, max_len: int, min_len: int, scale: float | None, causal: bool = False
) -> Tensor:
    """The grid kernel as it runs off the CPU (a varlen.Kernel): one grid for the whole batch."""
    return varlen.one_grid_sdpa(q, k, v, cu, max_len, scale, causal)


def shares(backend: TorchCpuBackend, batches: list[list[list[int]]]) -> tuple[float, float, float]:
    """(attention share, index/fill/copy share, ms a sentence under the profiler) of running the batches."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for rows in batches:
            backend.embed(rows)
    spent = {e.key: e.self_cpu_time_total for e in prof.key_averages()}
    total = sum(spent.values())
    around = sum(spent.get(k, 0.0) for k in AROUND)
    return spent.get(ATTENTION, 0.0) / total, around / total, total / 1e3 / sum(len(b) for b in batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--group", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cores = torch.get_num_threads()  # the server's batch workers: one batch per core
    torch.set_num_threads(1)
    sentences = list(dict.fromkeys(sts_sentences()))
    model = SentenceEncoder.load("all-MiniLM-L6-v2")
    backend = TorchCpuBackend(model.as_chain(), torch.device("cpu"))
    ids = [e.ids for e in model.fast_tokenizer().encode_batch(sentences)]
    random.Random(0).shuffle(ids)
    served = []
    for start in range(0, 640, args.group):
        group = ids[start : start + args.group]
        lengths = [len(r) for r in group]
        served += [[group[i] for i in b] for b in per_core(plan_batches(backend, lengths, None, None), lengths, cores)]
    offline = [[ids[i] for i in b] for b in plan_batches(backend, [len(r) for r in ids[:640]], None, None)]
    backend.embed(served[0])  # switches the packed copy to varlen attention
    from transformers import AttentionInterface

    kernels = {"one grid": one_grid, "buckets": varlen.grid_sdpa}
    print(f"all-MiniLM-L6-v2, one thread, 640 sentences: groups of {args.group} ({len(served)} batches), "
          f"offline ({len(offline)} batches); shares of CPU under torch's profiler")  # fmt: skip
    for _ in range(args.rounds):
        for name, kernel in kernels.items():
            AttentionInterface.register("sbert_varlen_grid", varlen.make_attention_function(kernel))
            attention, around, ms = shares(backend, served)
            print(f"{name:>9}: attention {attention:5.1%}, index/fill/copy {around:5.1%} ({ms:.2f} ms a sentence)")
        attention, around, ms = shares(backend, offline)
        print(f"{'offline':>9}: attention {attention:5.1%}, index/fill/copy {around:5.1%} ({ms:.2f} ms a sentence)")
    AttentionInterface.register("sbert_varlen_grid", varlen.make_attention_function(varlen.grid_sdpa))


if __name__ == "__main__":
    main()
