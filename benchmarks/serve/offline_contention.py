"""Why a loaded server's model threads cost more a text than offline encode: its groups or its neighbours.

    python benchmarks/serve/offline_contention.py [--rounds 8] [--group 64]

Two paired measurements in one process (all-MiniLM-L6-v2, torch backend, random STS benchmark test
sentences, this process's CPU time), each round on a fresh sample of 640 sentences so drift hits both sides:
- groups: `encode` called on groups of `--group` sentences (a server's merged requests) against one call
  over the same 640 (offline), the one-call figure the mean of a run before and after;
- neighbour: one call over the 640 while another process is busy 40% of the time (2 ms of JSON parsing,
  3 ms asleep: what a server's event loop and its clients are to the model threads on shared cores),
  against the same call alone before and after.
Prints each ratio's median and quartiles over the rounds.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_load import MODEL

from common import sts_sentences

SAMPLE = 640
# 2 ms of work, 3 ms of sleep, over and over: a neighbour busy 40% of one core.
NEIGHBOUR = """
import json, time
body = json.dumps([[0.1234567] * 384] * 4)
while True:
    start = time.perf_counter()
    while time.perf_counter() - start < 0.002:
        json.loads(body)
    time.sleep(0.003)
"""


def cpu_of(work: Callable[..., object], *args: object) -> float:
    """This process's CPU seconds for `work(*args)`."""
    start = time.process_time()
    work(*args)
    return time.process_time() - start


def one_round(encode: Callable[[list[str]], object], sample: list[str], group: int) -> tuple[float, float]:
    """(groups / one call, one call beside the neighbour / alone) for one sample, each against runs around it."""
    groups = [sample[i : i + group] for i in range(0, len(sample), group)]
    alone = [cpu_of(encode, sample)]
    split = sum(cpu_of(encode, g) for g in groups)
    alone.append(cpu_of(encode, sample))
    neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR])
    time.sleep(0.2)
    shared = cpu_of(encode, sample)
    neighbour.kill()
    neighbour.wait()
    alone.append(cpu_of(encode, sample))
    return split / statistics.mean(alone[:2]), shared / statistics.mean(alone[1:])


def quartiles(ratios: list[float]) -> str:
    """'median (q1..q3)' of the ratios."""
    r = sorted(ratios)
    return f"{statistics.median(r):.3f} ({r[len(r) // 4]:.3f}..{r[3 * len(r) // 4]:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--group", type=int, default=64)
    args = parser.parse_args()
    from sbert import SentenceEncoder

    sentences = list(dict.fromkeys(sts_sentences()))
    model = SentenceEncoder.load(MODEL)
    model.encode(sentences[:256], show_progress=False)
    rng = random.Random(0)
    rounds = [one_round(lambda texts: model.encode(texts, show_progress=False), rng.sample(sentences, SAMPLE),
                        args.group) for _ in range(args.rounds)]  # fmt: skip
    grouped, crowded = [r[0] for r in rounds], [r[1] for r in rounds]
    print(f"{MODEL}, {os.cpu_count()} cores, {args.rounds} rounds of {SAMPLE} sentences (median (quartiles))")
    print(f"  groups of {args.group} / one call: {quartiles(grouped)}")
    print(f"  one call beside a 40%-busy neighbour / alone: {quartiles(crowded)}")


if __name__ == "__main__":
    main()
