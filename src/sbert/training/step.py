"""One optimizer step: forward and backward over its micro-batches, then a guarded update.

On CUDA (bf16 or fp32) nothing here waits for the GPU: the loss stays a device tensor, and a
non-finite loss or gradient sets a sticky device flag that fused AdamW reads as `found_inf`, so
that step and every later one leave the weights untouched until the host looks (`check`, at log,
eval and checkpoint steps) and stops the run. On the CPU, and under fp16's grad scaler, the check
is immediate: there is no queue of GPU work to keep full.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel

from sbert.device import autocast
from sbert.errors import SbertError
from sbert.losses.gather import known_rows
from sbert.training.ddp import World
from sbert.training.prefetch import StepBatch
from sbert.training.setup import TrainModule


class TrainingError(SbertError):
    """Training stopped (a non-finite loss, out of memory); nothing already saved was touched."""


@dataclass
class StepRunner:
    """Runs optimizer steps of one stage; `last_good` names the checkpoint to quote in errors."""

    module: TrainModule
    wrapped: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    scaler: torch.amp.GradScaler
    dtype: torch.dtype | None
    max_grad_norm: float
    world: World
    names: Sequence[str]
    last_good: Callable[[], str]
    deferred: bool = False
    step_lr: float = 0.0
    _poisoned: Tensor = field(init=False)
    _first_bad: Tensor = field(init=False)

    def __post_init__(self) -> None:
        self.device = next(self.module.parameters()).device
        self.params = [p for p in self.module.parameters() if p.requires_grad]
        self._poisoned = torch.zeros((), dtype=torch.bool, device=self.device)
        self._first_bad = torch.zeros((), dtype=torch.long, device=self.device)

    def step(self, batches: Sequence[StepBatch], number: int) -> Tensor:
        """Accumulate the gradients of `batches` (weighted by their examples), then update once.

        Returns the step's loss as a detached device tensor: read it only when it is logged.
        """
        weights = self._weights(batches)
        loss = torch.zeros((), device=self.device)
        # A cached loss replays the encoder once per mini-batch inside backward: DDP's reducer would see each
        # parameter ready several times. Its gradients stay local and are averaged here after the backward.
        replayed = self.world.size > 1 and any(self.module.losses[b.objective].needs_model for b in batches)
        for i, batch in enumerate(batches):
            try:
                with self._no_sync(replayed or i < len(batches) - 1), known_rows(batch.rank_rows):
                    with autocast(self.dtype, self.device):
                        part = self.wrapped(batch.objective, batch.columns, batch.labels, batch.splits)
                        part = part * weights[i]
                    self.scaler.scale(part).backward()
            except torch.OutOfMemoryError:
                raise TrainingError(
                    f"step {number}: out of GPU memory on a {self.names[batch.objective]} batch of "
                    f"{batch.shape} tokens; lower --batch-size (or --batch-tokens), or raise --grad-accum"
                ) from None
            loss = loss + part.detach().float()
        if replayed:
            self._average_gradients()
        # The rate this update uses: what the log records, as transformers logs it.
        self.step_lr = float(self.scheduler.get_last_lr()[0])
        self._update(loss, number, "/".join(dict.fromkeys(self.names[b.objective] for b in batches)))
        return loss

    def _weights(self, batches: Sequence[StepBatch]) -> list[float]:
        """Each micro-batch's share of the step: its rows over the step's rows, counted over every rank.

        Each rank's loss is a mean over its own rows and DDP averages the ranks' gradients equally, so under
        torchrun a rank's loss is scaled by world size x its rows / the global rows: a batch split unevenly
        (7 rows as 4 + 3, the last batch of an epoch) then takes the one-process step, and the logged mean over
        ranks is the global batch's loss. A term equal on every rank (SPLADE's FLOPS) keeps its weight.
        """
        if batches[0].rank_rows is None:
            total = sum(b.examples for b in batches)
            return [b.examples / total for b in batches]
        world_rows = sum(sum(b.rank_rows or ()) for b in batches)
        return [self.world.size * b.examples / world_rows for b in batches]

    def _average_gradients(self) -> None:
        """What DDP's reducer does, by hand: every rank's gradients summed and divided by the process count.

        One all-reduce of all gradients flattened together, not one per parameter (a collective each).
        """
        for param in self.params:
            if param.grad is None:
                param.grad = torch.zeros_like(param)  # every rank sends the same layout
        grads = [param.grad for param in self.params if param.grad is not None]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        flat.div_(self.world.size)
        for grad, part in zip(grads, flat.split([g.numel() for g in grads]), strict=True):
            grad.copy_(part.view_as(grad))

    def check(self) -> None:
        """Raise if a step since the start was not finite (a host sync: call at log/eval/save steps)."""
        if self.deferred and bool(self._poisoned.item()):
            what = "the loss or its gradients were not finite; the weights were not updated from then on"
            raise self._error(int(self._first_bad.item()), what)

    def _update(self, loss: Tensor, number: int, objectives: str) -> None:
        bad = ~torch.isfinite(loss)
        self.scaler.unscale_(self.optimizer)
        norm = torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
        if not self.scaler.is_enabled():  # under fp16, inf gradients only mean the scale must drop
            bad = bad | ~torch.isfinite(norm)
        if self.world.size > 1:
            flag = bad.to(torch.float32)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            bad = flag > 0
        if self.deferred:
            self._first_bad = torch.where(~self._poisoned & bad, number, self._first_bad)
            self._poisoned = self._poisoned | bad
            self.optimizer.found_inf = self._poisoned.to(torch.float32)  # type: ignore[attr-defined]
            self.optimizer.step()
        else:
            if bool(bad.item()):
                raise self._error(number, f"{objectives} loss is {loss.item()}; stopped before updating the weights")
            self.scaler.step(self.optimizer)
            self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()

    def _error(self, number: int, what: str) -> TrainingError:
        return TrainingError(f"step {number}: {what} (last good checkpoint: {self.last_good()})")

    def _no_sync(self, skip: bool) -> contextlib.AbstractContextManager[object]:
        # Gradients of all but the last micro-batch stay local: one all-reduce per optimizer step.
        if skip and isinstance(self.wrapped, DistributedDataParallel):
            return self.wrapped.no_sync()
        return contextlib.nullcontext()


def build_optimizer(module: nn.Module, lr: float, weight_decay: float, fused: bool = False) -> torch.optim.AdamW:
    """AdamW; biases and LayerNorm weights (1-D parameters) get no weight decay, as in BERT.

    `fused` (one kernel for all parameters) is what CUDA runs: it also takes `found_inf`, which
    lets a bad step be skipped on the device without the host waiting for it.
    """
    decay = [p for p in module.parameters() if p.requires_grad and p.ndim >= 2]
    no_decay = [p for p in module.parameters() if p.requires_grad and p.ndim < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, fused=True if fused else None)


def retarget_optimizer(optimizer: torch.optim.Optimizer, fused: bool) -> None:
    """After loading a checkpoint from another device: the kernel choice and step counters of this one.

    A checkpoint written on CUDA carries `fused=True` and device step counters; on the CPU (and the
    other way round) they are set to what this run's optimizer would have used.
    """
    for group in optimizer.param_groups:
        group["fused"] = True if fused else None
        group["foreach"] = None
        for param in group["params"]:
            state = optimizer.state.get(param)
            if state and isinstance(state.get("step"), Tensor):
                device = param.device if fused else torch.device("cpu")
                state["step"] = state["step"].to(device=device, dtype=torch.float32)
