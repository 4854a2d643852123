"""A server's merged group on every core: batches cut to equal tokens against batches filled in turn.

    python benchmarks/speed/group_balance.py [--group 64] [--rounds 5]

The CPU backend runs a group's batches one per core. Filled in turn to the 512-token budget, a group of 64
random STS sentences is 510 + 422 tokens and one core waits for the other; cut to equal tokens
(`vectors/batching.py` packed_batches with `parts`) it is 466 + 466. Per round, the same random groups
(all-MiniLM-L6-v2, every core) under each plan, alternating: wall ms a group and CPU ms a text, and the
plans' core use (tokens over cores x the busiest core's tokens, the cores taking batches in turn).
Prints each figure's median over the rounds.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
import sbert.encoding.engine as engine
from common import cpu_facts, sts_sentences
from sbert import SentenceEncoder
from sbert.backends.torch_cpu import per_core

EVEN = engine.packed_batches


def filled(order: Sequence[int], lengths: Sequence[int], max_tokens: int, max_size: int, parts: int = 1) -> list:
    """The plan before equal cuts: batches filled in turn, whatever runs beside them."""
    return EVEN(order, lengths, max_tokens, max_size)


def core_use(model: SentenceEncoder, groups: list[list[list[int]]]) -> float:
    """Mean over groups of tokens / (cores x the busiest core's tokens), batches taken in turn by free cores."""
    backend = model.backend("torch")
    uses = []
    for rows in groups:
        lengths = [len(r) for r in rows]
        cores = [0] * backend.workers
        for batch in per_core(engine.plan_batches(backend, lengths, None, None), lengths, backend.workers):
            cores[cores.index(min(cores))] += sum(lengths[i] for i in batch)
        uses.append(sum(cores) / (len(cores) * max(cores)))
    return statistics.mean(uses)


def run(model: SentenceEncoder, groups: list[list[list[int]]]) -> tuple[float, float, float]:
    """(wall ms a group, CPU ms a text, core use) of the groups under the plan in force."""
    use = core_use(model, groups)
    wall, cpu = time.perf_counter(), time.process_time()
    for rows in groups:
        model.encode_token_rows(rows)
    texts = sum(len(g) for g in groups)
    return (time.perf_counter() - wall) * 1000 / len(groups), (time.process_time() - cpu) * 1000 / texts, use


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--group", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    model = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    rows, _ = model.token_rows(list(dict.fromkeys(sts_sentences())))
    model.encode_token_rows(rows[:64])
    results: dict[str, list[tuple[float, float, float]]] = {"equal tokens": [], "filled in turn": []}
    for r in range(args.rounds):
        rng = random.Random(r)
        groups = [rng.sample(rows, args.group) for _ in range(max(8, 1280 // args.group))]
        for name, plan in (("equal tokens", EVEN), ("filled in turn", filled))[:: 1 if r % 2 else -1]:
            engine.packed_batches = plan
            results[name].append(run(model, groups))
    engine.packed_batches = EVEN
    facts = cpu_facts()
    print(f"{facts['cpu']}, {facts['cores']} cores, torch threads {torch.get_num_threads()}; groups of "
          f"{args.group} random STS sentences, {args.rounds} rounds (medians)")  # fmt: skip
    for name, rounds in results.items():
        wall, cpu, use = (statistics.median(r[k] for r in rounds) for k in range(3))
        print(f"{name:>15}: {wall:7.1f} ms a group, {cpu:5.2f} ms CPU a text, core use {use:.2f}")


if __name__ == "__main__":
    main()
