"""Where a server's small merged group spends its extra CPU: around the forwards, in them, in their attention.

    python benchmarks/speed/small_group_parts.py [--rounds 5] [--groups 60]

all-MiniLM-L6-v2 on the torch backend, random STS benchmark test sentences as token rows (what the server's
batcher hands the model), each round on fresh groups so drift hits every figure alike. Per round, CPU
microseconds a token (this process's CPU time, every thread) of:
- `call16` / `call-all`: `encode_token_rows` on groups of 16 rows (16 one-text clients merged; the backend
  cuts each into two runs of 8, one a core), and one call on the same rows (offline's batches);
- `lean8x2` / `lean64x2`: the lean packed forward alone (backends/lean_bert.py) on the same rows, two
  threads of one torch thread each, as the server runs a group's halves: runs of 8 rows, and of 64;
- `attn8`, `attn16`, `attn64`: the packed attention alone (grid_buckets.bucketed_sdpa, one thread) on random
  queries, keys and values laid out as those runs' tokens, a microsecond a token a layer.
Then the medians and three ratios: the call of 16 over one call (what the group costs), the forwards of 8
over forwards of 64 (what the forward's size costs) and the call of 16 over its own forwards (what the call
around them costs).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import cpu_facts, sts_sentences
from sbert import load
from sbert.backends.grid_buckets import bucketed_sdpa
from sbert.backends.packing import pack

Rows = list[list[int]]


def process_us(run: Callable[[], object], tokens: int) -> float:
    """This process's CPU microseconds a token over one run."""
    start = time.process_time()
    run()
    return (time.process_time() - start) / tokens * 1e6


def on_two_threads(parts: Sequence[Rows], forward: Callable[[Rows], object]) -> None:
    """`forward` over the runs, alternate runs on two threads of one torch thread each (a server's cut)."""

    def lane(runs: Sequence[Rows]) -> None:
        torch.get_num_threads()  # set this thread up first, then give it one core
        torch.set_num_threads(1)
        for run in runs:
            forward(run)

    threads = [threading.Thread(target=lane, args=(parts[i::2],)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def attention_us(rows: Rows, size: int, heads: int, head_dim: int, rng: random.Random) -> float:
    """Packed attention alone on one thread over runs of `size` rows: CPU microseconds a token a layer."""
    runs = [pack(rng.sample(rows, size), 0) for _ in range(max(8, 960 // size))]
    data = [(torch.randn(int(run.input_ids.shape[0]), 3, heads, head_dim), run.cu_seqlens) for run in runs]
    tokens = sum(qkv.shape[0] for qkv, _ in data)

    def attend() -> None:
        for qkv, cu in data:
            for _ in range(6):  # a forward's six layers on the same plan
                bucketed_sdpa(qkv[:, 0], qkv[:, 1], qkv[:, 2], cu, head_dim**-0.5, False)

    torch.set_num_threads(1)
    with torch.inference_mode():
        return process_us(attend, tokens * 6)


def one_round(model, rows: Rows, groups: int, rng: random.Random) -> dict[str, float]:  # noqa: ANN001
    """Every figure once, on fresh random groups of 16 rows."""
    engine = model.backend("torch", "auto")
    lean, offset = engine._lean, engine._offset  # the shipped lean forward and its packing
    cut = [rng.sample(rows, 16) for _ in range(groups)]
    flat = [row for group in cut for row in group]
    tokens = sum(len(row) for row in flat)
    halves = [half for group in cut for half in (group[:8], group[8:])]
    sixty_fours = [flat[i : i + 64] for i in range(0, len(flat), 64)]

    def forward(run: Rows) -> None:
        with torch.inference_mode():
            lean(pack(run, offset))

    torch.set_num_threads(2)
    out = {"call16": process_us(lambda: [model.encode_token_rows(group) for group in cut], tokens),
           "call-all": process_us(lambda: model.encode_token_rows(flat), tokens),
           "lean8x2": process_us(lambda: on_two_threads(halves, forward), tokens),
           "lean64x2": process_us(lambda: on_two_threads(sixty_fours, forward), tokens)}  # fmt: skip
    heads, head_dim = lean.heads, lean.head_dim
    out.update({f"attn{size}": attention_us(rows, size, heads, head_dim, rng) for size in (8, 16, 64)})
    torch.set_num_threads(2)
    return out


def main() -> None:
    """Print each round's figures, then the medians and the three ratios."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--groups", type=int, default=60, help="groups of 16 rows a round")
    args = parser.parse_args()
    model = load()
    rows, _ = model.token_rows(sts_sentences())
    model.encode_token_rows(rows[:64])  # the packed copy and the lean forward made before any timing
    if model.backend("torch", "auto")._lean is None:
        raise SystemExit("the lean forward does not run on this machine: nothing to take apart")
    print(f"cpu: {cpu_facts()['cpu']}, {cpu_facts()['cores']} cores; torch {torch.__version__}")
    rng = random.Random(0)
    rounds = []
    for index in range(args.rounds):
        rounds.append(one_round(model, rows, args.groups, rng))
        print(f"round {index}: " + "  ".join(f"{k} {v:.1f}" for k, v in rounds[-1].items()))
    median = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    print("median us a token: " + "  ".join(f"{k} {v:.2f}" for k, v in median.items()))
    print(f"call of 16 / one call: {median['call16'] / median['call-all']:.3f}x; forwards of 8 / of 64: "
          f"{median['lean8x2'] / median['lean64x2']:.3f}x; call of 16 / its forwards: "
          f"{median['call16'] / median['lean8x2']:.3f}x; attention a layer at 8 / 64 rows: "
          f"{median['attn8'] / median['attn64']:.3f}x")  # fmt: skip


if __name__ == "__main__":
    main()
