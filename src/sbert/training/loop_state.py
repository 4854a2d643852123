"""The mutable state of one training stage: what a checkpoint captures and restores."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from sbert.training.checkpoint import Progress
from sbert.training.config import Stage
from sbert.training.dev_sets import DevSet
from sbert.training.setup import Prepared, TrainModule


@dataclass
class StageState:
    """Module, optimizer, schedule and position of a stage in progress."""

    index: int
    stage: Stage
    prepared: list[Prepared]
    dev: list[DevSet]
    module: TrainModule
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    total: int
    dtype: torch.dtype | None
    progress: Progress
    batches: dict[str, int] = field(default_factory=dict)  # training set -> batches it gets in this stage
    scaler: torch.amp.GradScaler = field(init=False)

    def __post_init__(self) -> None:
        # Loss scaling is needed only for fp16 (bf16 has fp32's exponent range).
        device = next(self.module.parameters()).device.type
        self.scaler = torch.amp.GradScaler(device, enabled=self.dtype == torch.float16 and device == "cuda")

    def advance(self, epoch: int, next_in_epoch: int, global_step: int, elapsed: float) -> None:
        """Record that one more step is done; the position names the next step to take."""
        self.progress = replace(
            self.progress,
            epoch=epoch,
            step_in_epoch=next_in_epoch,
            global_step=global_step,
            stage_step=self.progress.stage_step + 1,
            elapsed=elapsed,
        )

    def states(self) -> dict[str, Any]:
        """Everything a checkpoint stores besides the random generators."""
        return {
            "module": self.module.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
        }

    def restore(self, progress: Progress, states: dict[str, Any]) -> None:
        """Load a checkpoint taken in this stage."""
        self.module.load_state_dict(states["module"])
        self.optimizer.load_state_dict(states["optimizer"])
        self.scheduler.load_state_dict(states["scheduler"])
        if states.get("scaler"):
            self.scaler.load_state_dict(states["scaler"])
        self.progress = progress

    def save_heads(self, path: Path) -> None:
        """Write the trained heads of this stage's losses (the NLI classifier) into a model folder."""
        for prepared in self.prepared:
            prepared.loss.save_head(path)
