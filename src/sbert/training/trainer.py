"""The training loop: stages of round-robin objectives, dev evaluation, checkpoints and resume."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel
from tqdm.auto import tqdm

from sbert.data import Dataset
from sbert.device import autocast, autocast_dtype, resolve_device
from sbert.errors import SbertError
from sbert.evaluation import evaluate
from sbert.model import SentenceEncoder
from sbert.training import card
from sbert.training.checkpoint import Progress, checkpoint_dirs, load_checkpoint, save_checkpoint
from sbert.training.config import Stage, TrainConfig
from sbert.training.ddp import World, all_finite, barrier, close, init_world, shard
from sbert.training.epoch_plan import epoch_plan
from sbert.training.loop_state import StageState
from sbert.training.runlog import RunLog
from sbert.training.schedule import warmup_linear, warmup_steps
from sbert.training.setup import (
    StageData,
    TrainModule,
    build_optimizer,
    preflight,
    prepare_objectives,
)


class TrainingError(SbertError):
    """Training stopped (a non-finite loss); nothing already saved was touched."""


@dataclass(frozen=True)
class TrainResult:
    """What a finished run produced."""

    output: Path
    steps: int
    seconds: float
    best_score: float | None


class Trainer:
    """Runs a TrainConfig: one stage after another, then writes the model and its card."""

    def __init__(
        self, config: TrainConfig, show_progress: bool = True, datasets: Mapping[str, Dataset] | None = None
    ) -> None:
        config.validate()
        self.config = config
        self.datasets = datasets  # specs served from memory instead of read from disk
        self.output = Path(config.output)
        self.run_dir = Path(f"{config.output}.run")
        self.device = resolve_device(config.device, local_rank=True)
        self.world: World = init_world(self.device)
        self.log = RunLog(self.run_dir / "train_log.jsonl", enabled=self.world.main)
        self.show_progress = show_progress and self.world.main
        self.global_step = 0
        self.started = time.monotonic()

    def run(self, resume: bool = False) -> TrainResult:
        """Train every stage; with `resume`, continue from the newest checkpoint."""
        checkpoint = self._resume_point(resume)
        start_stage = _stage_of(checkpoint)
        data = preflight(self.config.stages, self.config.skip_bad, self.datasets)
        model = self._load_model()
        self.started = time.monotonic()
        state: StageState | None = None
        try:
            for index, stage in enumerate(self.config.stages):
                if index >= start_stage:
                    resume_from = checkpoint if index == start_stage else None
                    state = self._run_stage(model, index, stage, data[index], resume_from)
            assert state is not None
            self._finish(model, state, self.elapsed())
        finally:
            close(self.world)
        return TrainResult(self.output, self.global_step, self.elapsed(), state.progress.best_score)

    def elapsed(self) -> float:
        """Training wall time, including the time before a resume."""
        return time.monotonic() - self.started

    def _resume_point(self, resume: bool) -> Path | None:
        found = checkpoint_dirs(self.run_dir)
        if found and not resume:
            raise SbertError(
                f"{self.run_dir} holds checkpoints of an earlier run: pass --resume to continue it, or remove it"
            )
        return found[-1] if resume and found else None

    def _load_model(self) -> SentenceEncoder:
        _seed_everything(self.config.seed)
        if self.config.pooling is not None:  # a new pooling head on the encoder, as for the paper's ablation
            model = SentenceEncoder.from_transformer(self.config.model, self.config.pooling, device=self.device)
        else:
            model = SentenceEncoder.load(self.config.model, device=self.device)
        if self.config.max_seq_length is not None:
            model.max_seq_length = self.config.max_seq_length
        return model

    def _run_stage(
        self, model: SentenceEncoder, index: int, stage: Stage, data: StageData, checkpoint: Path | None
    ) -> StageState:
        torch.manual_seed(self.config.seed * 1000 + index)  # heads start the same whatever came before
        prepared = prepare_objectives(model, stage, data.train)
        dev = data.dev
        module = TrainModule(model, [p.loss for p in prepared]).to(self.device)
        module.train()  # a loaded encoder is in eval mode: without this, training would run without dropout
        plan_lengths = [p.lengths for p in prepared]
        per_epoch = len(epoch_plan(plan_lengths, stage.batch_size, self.config.seed, index, 0, stage.length_groups))
        total = per_epoch * stage.epochs if not stage.max_steps else min(per_epoch * stage.epochs, stage.max_steps)
        optimizer = build_optimizer(module, stage.lr, stage.weight_decay)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, warmup_linear(total, warmup_steps(total, stage.warmup))
        )
        state = StageState(
            index,
            stage,
            prepared,
            dev,
            module,
            optimizer,
            scheduler,
            total,
            dtype=autocast_dtype(self.config.precision, self.device),
            progress=Progress(index, 0, 0, self.global_step, 0),
        )
        if checkpoint is not None:
            state.restore(*load_checkpoint(checkpoint))
            self.global_step = state.progress.global_step
            self.started = time.monotonic() - state.progress.elapsed
            self.log.truncate_after(self.global_step)
        self.log.write(
            event="stage",
            stage=index,
            step=self.global_step,
            total_steps=total,
            world=self.world.size,
            data={p.dataset.name: len(p.dataset) for p in prepared},
            truncated=sum(p.truncated for p in prepared),
        )
        self._epochs(state, plan_lengths)
        if dev is not None and state.progress.best_score is not None:
            barrier(self.world)
            model.load_state_dict(SentenceEncoder.load(self.output, device=self.device).state_dict())
        return state

    def _epochs(self, state: StageState, plan_lengths: list[list[int]]) -> None:
        stage, wrapped = state.stage, self._wrap(state.module)
        bar = tqdm(
            total=state.total,
            initial=state.progress.stage_step,
            disable=not self.show_progress,
            desc=f"stage {state.index + 1}",
            unit="step",
        )
        examples, window_start = 0, time.monotonic()
        for epoch in range(state.progress.epoch, stage.epochs):
            plan = epoch_plan(plan_lengths, stage.batch_size, self.config.seed, state.index, epoch, stage.length_groups)
            first = state.progress.step_in_epoch if epoch == state.progress.epoch else 0
            for i in range(first, len(plan)):
                if state.progress.stage_step >= state.total:
                    break
                objective, indices = plan[i]
                loss = self._step(state, wrapped, objective, indices)
                self.global_step += 1
                examples += len(indices)
                state.advance(epoch, i + 1, self.global_step, self.elapsed())
                rate = examples / max(time.monotonic() - window_start, 1e-9)
                bar.update(1)
                bar.set_postfix(loss=f"{loss:.4f}", ex_s=f"{rate:.0f}")
                self._after_step(state, objective, loss, rate)
            # Each epoch (or a --max-steps cut) ends with a dev score, unless its last step just had one.
            if state.dev is not None and not (stage.eval_steps and state.progress.stage_step % stage.eval_steps == 0):
                self._evaluate(state)
            if state.progress.stage_step >= state.total:
                break
        bar.close()

    def _step(self, state: StageState, wrapped: torch.nn.Module, objective: int, indices: list[int]) -> float:
        prepared = state.prepared[objective]
        mine = shard(indices, self.world)
        transformer = state.module.model.transformer
        columns = [
            {k: v.to(self.device) for k, v in transformer.pad([col[i] for i in mine]).items()}
            for col in prepared.columns
        ]
        labels = prepared.labels[mine].to(self.device) if prepared.labels is not None else None
        with autocast(state.dtype, self.device):
            loss = wrapped(objective, columns, labels)
        if not all_finite(loss, self.world):
            last = checkpoint_dirs(self.run_dir)
            raise TrainingError(
                f"step {self.global_step + 1}: {prepared.name} loss is {loss.item()}; stopped before updating "
                f"the weights (last good checkpoint: {last[-1] if last else 'none'})"
            )
        state.scaler.scale(loss).backward()
        state.scaler.unscale_(state.optimizer)
        torch.nn.utils.clip_grad_norm_(state.module.parameters(), state.stage.max_grad_norm)
        state.scaler.step(state.optimizer)
        state.scaler.update()
        state.optimizer.zero_grad(set_to_none=True)
        state.scheduler.step()
        return float(loss.detach())

    def _after_step(self, state: StageState, objective: int, loss: float, rate: float) -> None:
        step, stage = self.global_step, state.stage
        if step % self.config.log_steps == 0 or state.progress.stage_step == state.total:
            self.log.write(
                event="train",
                stage=state.index,
                step=step,
                objective=state.prepared[objective].name,
                loss=round(loss, 6),
                lr=state.scheduler.get_last_lr()[0],
                examples_per_s=round(rate, 1),
            )
        if state.dev is not None and stage.eval_steps and state.progress.stage_step % stage.eval_steps == 0:
            self._evaluate(state)
        if self.config.checkpoint_steps and step % self.config.checkpoint_steps == 0:
            if self.world.main:
                save_checkpoint(self.run_dir, state.progress, state.states(), self.config.keep_checkpoints)
            barrier(self.world)

    def _evaluate(self, state: StageState) -> None:
        assert state.dev is not None
        if self.world.main:
            metric, scores = evaluate(state.module.model, state.dev)
            score = scores[metric]
            best = state.progress.best_score
            improved = best is None or score > best
            if improved:
                state.module.model.save(self.output, extras=state.save_heads)
                state.progress = replace(state.progress, best_score=score, best_step=self.global_step)
            self.log.write(
                event="eval",
                stage=state.index,
                step=self.global_step,
                metric=metric,
                score=round(score, 4),
                best=improved,
                scores={k: round(v, 4) for k, v in scores.items()},
            )
        barrier(self.world)

    def _wrap(self, module: TrainModule) -> torch.nn.Module:
        if self.world.size == 1:
            return module
        ids = [self.device.index] if self.device.type == "cuda" else None
        # Unused parameters are the norm here: the encoder's pooler, and the heads of the other objectives.
        return DistributedDataParallel(module, device_ids=ids, find_unused_parameters=True)

    def _finish(self, model: SentenceEncoder, state: StageState, seconds: float) -> None:
        if not self.world.main:
            return
        self.log.write(
            event="done", step=self.global_step, seconds=round(seconds, 1), best_score=state.progress.best_score
        )
        text = card.render(self.config, state, self.global_step, seconds)
        if state.dev is not None and state.progress.best_score is not None:
            card.write_beside(self.output, text, self.log.path)  # the best model is already in place
        else:
            model.save(self.output, extras=lambda path: card.write_into(path, text, self.log.path, state))


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _stage_of(checkpoint: Path | None) -> int:
    if checkpoint is None:
        return 0
    return int(json.loads((checkpoint / "progress.json").read_text())["stage"])
