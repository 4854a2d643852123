"""The communication share of a training step under torchrun: run by train_scaling.py, one process per rank.

    torchrun --nproc_per_node 2 benchmarks/speed/train_comm.py TABLE BATCH OBJECTIVE OUT.json

Trains the default model on TABLE (STS pairs) under torch.profiler for a few steps after a warm-up. Rank 0
writes the wall time per step and the time per step in which at least one collective (gloo's all-reduce,
all-gather, broadcast, scatter: DDP's gradient buckets, the gathered batch, the loss) was in flight, the union
of their intervals over every thread. DDP overlaps its gradient all-reduce with the backward, so the share is
the time communication took, an upper bound of what it cost the step.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from torch.profiler import ProfilerActivity, profile, schedule

from sbert.data import load_dataset
from sbert.training import Objective, Stage, TrainConfig, Trainer
from sbert.training.step import StepRunner

WARM, ACTIVE = 3, 8


def in_flight_ms(events: Any) -> float:
    """Milliseconds in which at least one collective ran (the union of their intervals, all threads)."""
    spans = sorted((e.time_range.start, e.time_range.end) for e in events if e.name.startswith("gloo:"))
    total, end = 0.0, float("-inf")
    for start, stop in spans:
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total / 1e3  # the profiler's clock is in microseconds


def main() -> None:
    table, batch, objective, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    stage = Stage((Objective(objective, "bench"),), batch_size=batch, max_steps=WARM + ACTIVE + 1)
    config = TrainConfig(model="all-MiniLM-L6-v2", output=f"{tempfile.mkdtemp()}/model", stages=(stage,),
                         device="cpu", log_steps=1000)  # fmt: skip
    original, marks = StepRunner.step, []

    def stepped(self: StepRunner, batches: Any, number: int) -> Any:
        loss = original(self, batches, number)
        if number in (WARM, WARM + ACTIVE):
            marks.append(time.perf_counter())
        prof.step()
        return loss

    with profile(
        activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=WARM, active=ACTIVE, repeat=1)
    ) as prof:
        StepRunner.step = stepped  # type: ignore[method-assign]
        Trainer(config, show_progress=False, datasets={"bench": load_dataset(f"stsb:{table}")}).run()
    if os.environ.get("RANK", "0") == "0":
        step_ms = (marks[1] - marks[0]) * 1e3 / ACTIVE
        comm_ms = in_flight_ms(prof.events()) / ACTIVE
        out.write_text(json.dumps({"step_ms": round(step_ms, 1), "communication_ms": round(comm_ms, 1),
                                   "communication_share": round(comm_ms / step_ms, 3)}))  # fmt: skip


if __name__ == "__main__":
    main()
