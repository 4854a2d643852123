"""What a second thread running torch on every core costs a one-text `encode`: GNU OpenMP's teams.

    python benchmarks/speed/openmp_teams.py [--calls 60] [--rounds 3]

Each case runs in a fresh process (a thread's OpenMP team lives as long as the thread), loads the default
model on the main thread, and times one-text `encode` calls (wall ms, median) on a second thread that runs
torch on every core, as the server's model thread does:
- `alone`: the main thread never ran an op on several threads after loading;
- `main ran too`: the main thread ran the same calls first (its team of workers stays);
- `main let go`: as above, then the main thread released its team (`release_openmp_workers`), as the
  server's loading thread does once its models are warm.
Rounds alternate the cases; each line gives the median over rounds and the ratio to `alone`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

CASES = ("alone", "main ran too", "main let go")


def one_text_ms(calls: int) -> float:
    """Median wall ms of `calls` one-text encodes, on the calling thread at torch's default count."""
    from sbert import load

    model = load("all-MiniLM-L6-v2", device="cpu")
    model.encode(["warm-up"])
    times = []
    for i in range(calls):
        start = time.perf_counter()
        model.encode([f"a short query about topic number {i}"])
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times[5:])


def run_case(case: str, calls: int) -> float:
    """This process: the case's main-thread work, then the timed calls on a second thread."""
    import torch

    from sbert.backends.base import release_openmp_workers

    cores = torch.get_num_threads()
    if case != "alone":
        one_text_ms(calls // 2)
    if case == "main let go":
        release_openmp_workers()
    out: list[float] = []

    def second() -> None:
        torch.set_num_threads(cores)
        out.append(one_text_ms(calls))

    thread = threading.Thread(target=second)
    thread.start()
    thread.join()
    return out[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--case", choices=CASES, help=argparse.SUPPRESS)  # one case, in this process
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.calls)))
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
    from common import cpu_facts

    facts = cpu_facts()
    print(f"{facts['cpu']}, {facts['cores']} cores; one-text encode on a second thread, wall ms (median)")
    results: dict[str, list[float]] = {case: [] for case in CASES}
    for _ in range(args.rounds):
        for case in CASES:
            cmd = [sys.executable, __file__, "--case", case, "--calls", str(args.calls)]
            results[case].append(json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout))
    alone = statistics.median(results["alone"])
    for case, values in results.items():
        mid = statistics.median(values)
        print(f"{case:>13}: {mid:6.2f} ms ({mid / alone:.2f}x alone)  rounds: {', '.join(f'{v:.2f}' for v in values)}")


if __name__ == "__main__":
    main()
