"""Where the time goes: torch.profiler over steady-state encode batches and training steps, one short table.

Runs, each after a warm-up, under the profiler:
  encode MiniLM bf16 passages: the real all-MiniLM-L6-v2 on ~128-token passages (the engine's own batches)
  encode BERT-base bf16 passages: the BERT-base shape, random weights
  train MiniLM bf16 / fp32 regression (batch 16) and MNRL (batch 64): a few optimizer steps each
Per run: batches (or steps), wall ms per batch, the device's busy and idle shares of that wall time
(the union of its kernels' intervals), CPU op time per batch (the host side), kernel launches per
batch, reads of device memory by the host per batch (each a wait for the GPU's queue: sbert/host_reads.py), aten
ops and dtype casts per batch (those three counted on a separate batch or step), then the top kernels by device
time. On the CPU (--device cpu --smoke) the same code runs;
device shares are then blank and the top rows are CPU ops. Each change to the engine names the row
of this table it moves.

    PYTHONPATH=src:benchmarks/gpu python3 benchmarks/gpu/gpu_profile.py --model DIR --data DIR --out OUT/profile.json
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from gpu_encode import passages, random_bert_base, scratch, sts_sentences, sync, with_graphs
from torch.profiler import ProfilerActivity, profile, schedule

from sbert import SentenceEncoder
from sbert.data import load_dataset
from sbert.encoding.engine import plan_batches
from sbert.host_reads import HostReads
from sbert.training import Objective, Stage, TrainConfig, Trainer
from sbert.training.step import StepRunner

LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch")
TOP = 8


def busy_seconds(events: Any) -> float:
    """Seconds in which the device ran at least one kernel: the union of the kernels' time intervals."""
    spans = sorted((e.time_range.start, e.time_range.end) for e in events if _on_device(e))
    busy, end = 0.0, float("-inf")
    for start, stop in spans:
        if stop <= end:
            continue
        busy += stop - max(start, end)
        end = stop
    return busy / 1e6  # the profiler's clock is in microseconds


def summarize(prof: Any, wall_s: float, batches: int, run: str, device: str) -> dict[str, Any]:
    """One run's row: wall and host time per batch, device busy / idle shares, launches per batch, top kernels."""
    events = prof.events()
    cpu_us = sum(e.self_cpu_time_total for e in events if not _on_device(e))
    launches = sum(1 for e in events if e.name in LAUNCHES)
    on_gpu = device == "cuda"
    busy = busy_seconds(events) if on_gpu else None
    key = "self_device_time_total" if on_gpu else "self_cpu_time_total"
    averages = sorted(
        (a for a in prof.key_averages() if not a.key.startswith("ProfilerStep")), key=lambda a: -_get(a, key)
    )
    total = sum(_get(a, key) for a in averages) or 1.0
    top = [{"name": a.key[:80], "calls": a.count, "ms": _get(a, key) / 1e3, "share": _get(a, key) / total}
           for a in averages[:TOP] if _get(a, key) > 0]  # fmt: skip
    return {
        "run": run, "batches": batches, "wall_ms_per_batch": 1e3 * wall_s / max(batches, 1),
        "device_busy_pct": None if busy is None else 100 * busy / wall_s,
        "device_idle_pct": None if busy is None else 100 * (1 - busy / wall_s),
        "host_cpu_ms_per_batch": cpu_us / 1e3 / max(batches, 1),
        "launches_per_batch": launches / max(batches, 1) if on_gpu else None, "top": top,
    }  # fmt: skip


def _on_device(event: Any) -> bool:
    # The profiler's step marks ("ProfilerStep#3") are mirrored on the GPU's timeline as annotations
    # that span the whole step: counted as kernels, they read as a device busy 99% of every step.
    name = str(getattr(event, "name", getattr(event, "key", "")))
    return str(getattr(event, "device_type", "")).endswith("CUDA") and not name.startswith("ProfilerStep")


def _get(average: Any, key: str) -> float:
    # torch renamed self_cuda_time_total to self_device_time_total; either may be the one present
    return float(getattr(average, key, getattr(average, "self_cuda_time_total", 0.0)) or 0.0)


def activities(device: str) -> list[ProfilerActivity]:
    """What the profiler records: CPU ops always, CUDA kernels on a GPU."""
    return [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if device == "cuda" else [])]


def profile_encode(model: SentenceEncoder, texts: list[str], precision: str, run: str, device: str) -> dict[str, Any]:
    """One warm encode of `texts` under the profiler; batches as the engine plans them."""
    model.encode(texts[: max(len(texts) // 4, 1)], precision=precision)  # warm-up: kernels, caches, graphs
    lengths = [len(row) for row in model.transformer.token_ids(texts)[0]]
    batches = len(plan_batches(model.backend("torch", precision), lengths, None, None))
    with profile(activities=activities(device)) as prof:
        sync()
        start = time.perf_counter()
        model.encode(texts, precision=precision)
        sync()
        wall = time.perf_counter() - start
    with HostReads() as reads:  # apart from the profiled run: the counting mode slows each op
        model.encode(texts, precision=precision)
    return {**summarize(prof, wall, batches, run, device), **counted(reads, batches)}


def counted(reads: HostReads, batches: int) -> dict[str, float]:
    """Per batch: host reads of device memory, aten ops (about one launch each on a GPU), dtype casts among them."""
    return {"host_reads_per_batch": reads.total / batches, "ops_per_batch": reads.ops / batches,
            "casts_per_batch": reads.casts / batches}  # fmt: skip


def profile_training(model: Path, data: Any, objective: str, batch: int, precision: str, device: str,
                     run: str, active: int, compile_backend: str = "") -> dict[str, Any]:  # fmt: skip
    """A few optimizer steps under the profiler, after `warm` steps; the trainer's own loop, stepped by a hook."""
    warm = 3
    out = scratch() / "model"
    stage = Stage((Objective(objective, "bench"),), batch_size=batch, max_steps=warm + active + 1)
    config = TrainConfig(model=str(model), output=str(out), stages=(stage,), precision=precision, device=device,
                         log_steps=1000, compile=compile_backend)  # fmt: skip
    original, marks, reads = StepRunner.step, [], HostReads()

    def stepped(self: StepRunner, batches: Any, number: int) -> torch.Tensor:
        if number == warm + active + 1:  # counted after the profiled steps: the counting mode slows each op
            with reads:
                return original(self, batches, number)
        loss = original(self, batches, number)
        if number == warm:
            sync()
            marks.append(time.perf_counter())
        if number == warm + active:
            sync()
            marks.append(time.perf_counter())
        prof.step()
        return loss

    plan = schedule(wait=0, warmup=warm, active=active, repeat=1)
    with profile(activities=activities(device), schedule=plan) as prof:
        StepRunner.step = stepped  # type: ignore[method-assign]
        try:
            Trainer(config, show_progress=False, datasets={"bench": data}).run()
        finally:
            StepRunner.step = original  # type: ignore[method-assign]
    return {**summarize(prof, marks[1] - marks[0], active, run, device), **counted(reads, 1)}


def table(rows: list[dict[str, Any]]) -> str:
    """The runs as one markdown table, then each run's top kernels."""

    def cell(v: Any, d: int = 1) -> str:
        return "-" if v is None else f"{v:,.{d}f}"

    lines = [
        "| run | batches | wall ms/batch | device busy % | device idle % | host CPU ms/batch | launches/batch "
        "| host reads/batch | aten ops/batch | casts/batch |",
        "|---|" + "---:|" * 9,
    ]
    lines += [f"| {r['run']} | {r['batches']} | {cell(r['wall_ms_per_batch'], 2)} | {cell(r['device_busy_pct'])} "
              f"| {cell(r['device_idle_pct'])} | {cell(r['host_cpu_ms_per_batch'], 2)} "
              f"| {cell(r['launches_per_batch'], 0)} | {cell(r.get('host_reads_per_batch'), 1)} "
              f"| {cell(r.get('ops_per_batch'), 0)} | {cell(r.get('casts_per_batch'), 0)} |" for r in rows]  # fmt: skip
    for r in rows:
        lines += ["", f"| top of {r['run']} | calls | ms | share |", "|---|---:|---:|---:|"]
        lines += [f"| {t['name']} | {t['calls']} | {t['ms']:,.2f} | {100 * t['share']:.1f}% |" for t in r["top"]]
    return "\n".join(lines)


def runs(args: argparse.Namespace) -> list[Callable[[], dict[str, Any]]]:
    """The profiled runs, in order (smoke: tiny sizes, fp32 on the CPU)."""
    texts = sts_sentences(args.data)[: 400 if args.smoke else None]
    minilm = SentenceEncoder.load(args.model, device=args.device)
    corpus = passages(texts, lambda t: [len(r) for r in minilm.transformer.token_ids(t)[0]])[
        : 64 if args.smoke else 4000
    ]
    layers = {"num_hidden_layers": 2} if args.smoke else {}
    bert_dir = random_bert_base(args.model, scratch() / "bert-base", **layers)
    bert = SentenceEncoder.from_transformer(bert_dir, device=args.device)
    half = "fp32" if args.device == "cpu" else "bf16"
    stsb = load_dataset(f"stsb:{args.data / 'stsbenchmark' / 'sts-train.csv'}")
    nli = load_dataset(f"nli:{args.data / 'snli'}:dev")
    steps = 2 if args.smoke else 10
    graphed = with_graphs(args.model, args.device)  # SBERT_CUDA_GRAPHS=1 (a plain engine on the CPU)
    compiled = [] if args.smoke else [  # inductor's first compile is minutes on a CPU: GPU runs only
        lambda: profile_training(args.model, stsb, "regression", 16, half, args.device,
                                 f"train MiniLM {half} regression b16 compiled", steps, "inductor")]  # fmt: skip
    return [
        lambda: profile_encode(minilm, corpus, half, f"encode MiniLM {half} passages", args.device),
        lambda: profile_encode(graphed, corpus, half, f"encode MiniLM {half} passages graphs", args.device),
        lambda: profile_encode(bert, corpus, half, f"encode BERT-base {half} passages", args.device),
        lambda: profile_training(args.model, stsb, "regression", 16, half, args.device,
                                 f"train MiniLM {half} regression b16", steps),
        lambda: profile_training(args.model, stsb, "regression", 16, "fp32", args.device,
                                 "train MiniLM fp32 regression b16", steps),
        lambda: profile_training(args.model, nli, "mnrl", 16 if args.smoke else 64, half, args.device,
                                 f"train MiniLM {half} mnrl b{16 if args.smoke else 64}", steps),
        *compiled,
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True, help="all-MiniLM-L6-v2 folder (real weights)")
    parser.add_argument("--device", default="cuda", help="cpu only for a smoke run of the script itself")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the script, measures nothing")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = []
    for run in runs(args):
        rows.append(run())
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "top"}), flush=True)
    if args.out:
        args.out.write_text(json.dumps({"device": args.device, "rows": rows}, indent=2))
    print(table(rows), flush=True)


if __name__ == "__main__":
    main()
