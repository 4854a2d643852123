"""Training throughput for 1 and 2 processes (torchrun, gloo on the CPU), the same global batch, same run.

python benchmarks/speed/train_scaling.py [--pairs 1024] [--batch 32] [--steps 30] [--objective mnrl] [--json F]

The default model (all-MiniLM-L6-v2, real weights) trains --steps steps of MNRL at global batch --batch
on the STS benchmark's training pairs, as one process and as 2 processes under torchrun, the cores
split between the processes (OMP_NUM_THREADS = cores / processes). Rate: examples/s over the steps
after the first fifth (start-up and warm-up out), from the run's own log; each setting twice,
alternated, medians. Under torchrun every rank sees the global batch (losses/gather.py), so both
rows take the same steps; the ratio says what a second process buys on this machine.
Then one profiled 2-process run (train_comm.py) gives the communication share of a step: the time a
collective was in flight, over the step's wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import STS_DIR, cpu_facts, median


def rate(log: Path, batch: int) -> float:
    """Examples/s between the first logged step past a fifth of the run and the last one."""
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    steps = [r for r in records if r.get("event") == "train"]
    last = steps[-1]
    first = next(r for r in steps if r["step"] >= 0.2 * last["step"])
    if first is last:
        raise SystemExit("train_scaling: too few logged steps to time (raise --steps)")
    return (last["step"] - first["step"]) * batch / (last["time"] - first["time"])


def run(processes: int, table: Path, args: argparse.Namespace, out: Path) -> float:
    """One training run; its steady examples/s."""
    cores = len(os.sched_getaffinity(0))
    env = {**os.environ, "OMP_NUM_THREADS": str(max(cores // processes, 1)), "TOKENIZERS_PARALLELISM": "false"}
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes),
                "--master_port", "29561"]  # fmt: skip
    launcher = [sys.executable] if processes == 1 else torchrun
    cmd = [*launcher, "-m", "sbert.cli.main", "train", "--model", "all-MiniLM-L6-v2", "--objective", args.objective,
           "--train", f"stsb:{table}",
           "--output", str(out), "--batch-size", str(args.batch), "--max-steps", str(args.steps), "--device", "cpu",
           "--no-progress", "--seed", "0"]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"train_scaling: {processes} process(es) failed: {done.stderr.strip().splitlines()[-1:]}")
    return rate(out / "train_log.jsonl", args.batch)


def communication(table: Path, args: argparse.Namespace, out: Path) -> dict[str, float]:
    """One profiled 2-process run (benchmarks/speed/train_comm.py): rank 0's step time and time in collectives."""
    cores = len(os.sched_getaffinity(0))
    env = {**os.environ, "OMP_NUM_THREADS": str(max(cores // 2, 1)), "TOKENIZERS_PARALLELISM": "false"}
    driver = Path(__file__).with_name("train_comm.py")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29562",
           str(driver), str(table), str(args.batch), args.objective, str(out)]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"train_scaling: the profiled run failed: {done.stderr.strip().splitlines()[-1:]}")
    return dict(json.loads(out.read_text(encoding="utf-8")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--objective", default="mnrl")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sbert-scaling-"))
    lines = (STS_DIR / "sts-train.csv").read_text(encoding="utf-8").splitlines()[: args.pairs]
    table = work / "train.csv"
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    runs: dict[int, list[float]] = {1: [], 2: []}
    for repeat in range(2):
        for processes in runs:
            runs[processes].append(run(processes, table, args, work / f"p{processes}-{repeat}"))
    rates = {p: median(r) for p, r in runs.items()}
    report = {"objective": args.objective, "global_batch": args.batch, "steps": args.steps,
              "examples_per_s": {str(p): round(r, 1) for p, r in rates.items()},
              "two_over_one": round(rates[2] / rates[1], 3), "runs": runs,
              "two_processes_profiled": communication(table, args, work / "comm.json"),
              **{k: v for k, v in cpu_facts().items() if k != "cpu_flags"}}  # fmt: skip
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
