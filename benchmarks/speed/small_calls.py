"""What a small `encode` call costs: a server's merged group of requests, or an app embedding one query.

    python benchmarks/speed/small_calls.py [--threads 1] [--repeats 5]

The default model on STS benchmark test sentences. Two figures per call size (1, 4, 8, 16, 32 texts):
- wall ms a call, median of `repeats` runs of 60 calls on consecutive sentences;
- CPU ms a text (process time) over random groups of that size, and its ratio to one offline `encode`
  of 1,024 sentences in the same run: what merging requests into larger groups can save.
With `--threads 1` the call runs as a serving lane does (one core); the default uses torch's thread count.
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
from sbert import SentenceEncoder, load

SIZES = (1, 4, 8, 16, 32)


def cpu_seconds(run: Callable[[], object]) -> float:
    """Process CPU seconds of one run (every thread of this process)."""
    start = time.process_time()
    run()
    return time.process_time() - start


def wall_ms_per_call(model: SentenceEncoder, texts: list[str], size: int, repeats: int) -> float:
    """Median wall ms of one `encode` call of `size` consecutive sentences."""
    runs = []
    for r in range(repeats):
        calls = [texts[i : i + size] for i in range(100 + r * 60 * size, 100 + (r + 1) * 60 * size, size)]
        start = time.perf_counter()
        for call in calls:
            model.encode(call)
        runs.append((time.perf_counter() - start) / len(calls) * 1000)
    return statistics.median(runs)


def cpu_ms_per_text(model: SentenceEncoder, texts: list[str], size: int, repeats: int) -> float:
    """Median CPU ms a text over random groups of `size` sentences."""
    rng = random.Random(0)
    runs = []
    for _ in range(repeats):
        groups = [rng.sample(texts, size) for _ in range(max(4, 256 // size))]
        runs.append(cpu_seconds(lambda g=groups: [model.encode(x) for x in g]) / (len(groups) * size) * 1000)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    texts = list(dict.fromkeys(sts_sentences()))
    model = load("all-MiniLM-L6-v2", device="cpu")
    model.encode(texts[:64])
    offline = min(cpu_seconds(lambda: model.encode(texts[:1024])) for _ in range(2)) / 1024 * 1000
    facts = cpu_facts()
    print(f"{facts['cpu']}, {facts['cores']} cores, torch threads {torch.get_num_threads()}; "
          f"offline encode of 1,024: {offline:.2f} ms a text")  # fmt: skip
    for size in SIZES:
        wall = wall_ms_per_call(model, texts, size, args.repeats)
        cpu = cpu_ms_per_text(model, texts, size, args.repeats)
        print(f"{size:>3} texts a call: {wall:7.2f} ms a call, {cpu:6.2f} ms CPU a text ({cpu / offline:.2f}x offline)")


if __name__ == "__main__":
    main()
