"""What one training step asks of a device, counted on the CPU: aten ops, casts and host reads.

Aten ops are on a GPU about one kernel launch each; casts are the dtype conversions among them; a host read
of device memory makes the host wait for the GPU's queue.

python benchmarks/speed/train_step_ops.py [--batch 16] [--json F]

The step is the one CUDA runs (training/step.py with the deferred non-finite guard and fused AdamW; the batch
made as the prefetch thread makes it: every column in one forward, the ready key mask), on the default model
(all-MiniLM-L6-v2, real weights) and real STS benchmark pairs, for regression, MNRL and cached MNRL (mini-batches
of a quarter of the batch), in fp32 and under bf16 autocast. The counts do not depend on the device's speed, only
on the code path (sbert/host_reads.py), so they are measured here; the GPU's time per step is gpu_profile.py's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import STS_DIR, cpu_facts
from sbert import SentenceEncoder
from sbert.data.common import Dataset
from sbert.host_reads import HostReads
from sbert.training.config import Objective, Stage
from sbert.training.ddp import World
from sbert.training.prefetch import make_batch, with_key_masks
from sbert.training.setup import TrainModule, prepare_objectives
from sbert.training.step import StepRunner, build_optimizer


def counts(objective: str, dtype: torch.dtype | None, data: Dataset, batch: int) -> dict[str, int]:
    """One steady-state step's op, cast and host-read counts (after one warm-up step)."""
    model = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    options = {"mini_batch": max(1, batch // 4)} if objective == "cached-mnrl" else {}
    prepared = prepare_objectives(model, Stage((Objective(objective, "sts", options),)), [data])
    module = TrainModule(model, [p.loss for p in prepared]).train()
    optimizer = build_optimizer(module, 1e-5, 0.01, fused=True)
    runner = StepRunner(module, module, optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0),
                        torch.amp.GradScaler("cpu", enabled=False), dtype, 1.0, World(), [objective], str,
                        deferred=True)  # fmt: skip
    p = prepared[0]
    made = make_batch([model.transformer.pad] * len(p.columns), p.columns, p.labels, 0, list(range(batch)), fuse=True)
    step = with_key_masks(made, model.input_module)
    runner.step([step], 1)
    with HostReads() as reads:
        runner.step([step], 2)
    return {"aten_ops": reads.ops, "casts": reads.casts, "host_reads": reads.total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    rows = [line.split("\t") for line in (STS_DIR / "sts-train.csv").read_text(encoding="utf-8").splitlines()]
    rows = rows[: args.batch]
    data = Dataset("sts", "pair-score", [(r[5], r[6]) for r in rows], [float(r[4]) / 5 for r in rows])
    report: dict[str, object] = {"model": "all-MiniLM-L6-v2", "batch": args.batch}
    for objective in ("regression", "mnrl", "cached-mnrl"):  # cached: mini-batches of a quarter of the batch
        for name, dtype in (("fp32", None), ("bf16", torch.bfloat16)):
            report[f"{objective} {name}"] = counts(objective, dtype, data, args.batch)
            print(objective, name, report[f"{objective} {name}"], flush=True)
    report.update({k: v for k, v in cpu_facts().items() if k != "cpu_flags"})
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
