"""The training loop: stages of round-robin objectives, dev evaluation, checkpoints and resume."""

from __future__ import annotations

import itertools
import random
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel
from tqdm.auto import tqdm

from sbert.adapters import parameter_counts, parse_lora
from sbert.dense.model import SentenceEncoder
from sbert.device import autocast_dtype, resolve_device
from sbert.errors import SbertError
from sbert.losses import Loss, is_token_level
from sbert.multivector.trainable import multi_vector_for_training
from sbert.native import native
from sbert.sparse.trainable import splade_for_training
from sbert.training import card
from sbert.training.agreement import check_agreement
from sbert.training.checkpoint import (
    SCRATCH_PREFIX,
    Progress,
    checkpoint_dirs,
    load_checkpoint,
    run_dir,
    save_checkpoint,
    stage_of,
)
from sbert.training.compiled import compiled_step
from sbert.training.config import Stage, TrainConfig
from sbert.training.ddp import World, barrier, close, init_world, mean_over_ranks, shard, shard_sizes
from sbert.training.dev_sets import score_devs
from sbert.training.epoch_plan import InOrder, epoch_plan
from sbert.training.loop_state import StageState
from sbert.training.lora import add_lora, enable_checkpointing
from sbert.training.prefetch import Prefetcher, StepBatch, make_batch, with_key_masks
from sbert.training.runlog import RunLog, dev_curves, write_curves_csv
from sbert.training.schedule import lr_factor, warmup_steps
from sbert.training.setup import (
    StageData,
    TrainModule,
    choose_objectives,
    describe_data,
    preflight,
    prepare_objectives,
)
from sbert.training.step import StepRunner, build_optimizer, retarget_optimizer

Step = list[tuple[int, list[int]]]  # the (objective, example indices) batches of one optimizer step


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
        self,
        config: TrainConfig,
        show_progress: bool = True,
        datasets: Mapping[str, Any] | None = None,
        model: torch.nn.Module | None = None,  # any encoder with training_chain() (a drop-in one too)
        on_record: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        if model is not None:
            refuse_held_int8(model)
            # A drop-in object: sbert's conventions on the same modules; then what the engine trains for its
            # kind (a SparseEncoder's SPLADE chain, sharing its weights).
            chain = getattr(native(model), "training_chain", None)
            if chain is None:
                raise SbertError(f"sbert's training engine does not train a {type(model).__name__}")
            model = cast(SentenceEncoder, chain())
        config.validate()
        self.config = config
        self.datasets = datasets  # specs served from memory instead of read from disk (datasets, dev evaluators)
        self.given_model = model  # trained in place instead of loading config.model
        self.output = Path(config.output)
        self.run_dir = run_dir(config.output, config.checkpoint_steps)
        self.device = resolve_device(config.device, local_rank=True)
        self.world: World = init_world(self.device)
        # `on_record` sees every log record as it is written (the drop-in trainer's callbacks and log_history).
        self.log = RunLog(self.run_dir / "train_log.jsonl", enabled=self.world.main, listener=on_record)
        self.show_progress = show_progress and self.world.main
        self.global_step = 0
        self.started = time.monotonic()
        self._window: list[torch.Tensor] = []  # the losses since the last log line, on the device (no host read)
        self._plan_texts: list[list[frozenset[int]] | None] = []

    def run(self, resume: bool = False) -> TrainResult:
        """Train every stage; with `resume`, continue from the newest checkpoint."""
        try:
            return self._run(resume)
        finally:  # a scratch run folder goes however the run ends (bad data is refused before any step)
            if self.run_dir.name.startswith(SCRATCH_PREFIX):
                shutil.rmtree(self.run_dir, ignore_errors=True)

    def _run(self, resume: bool) -> TrainResult:
        checkpoint = self._resume_point(resume)
        start_stage = stage_of(checkpoint)
        data = preflight(self.config.stages, self.config.skip_bad, self.datasets)
        stages, choices = choose_objectives(self.config.stages, data)
        self.config = replace(self.config, stages=stages)
        if self.world.main:
            for line in [*describe_data(data), *choices]:
                print(line, file=sys.stderr)
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
        if self.given_model is not None:
            model = self.given_model.to(self.device)
        elif self.config.pooling is not None:  # a new pooling head on the encoder, as for the paper's ablation
            model = SentenceEncoder.from_transformer(self.config.model, self.config.pooling, device=self.device,
                                                     dense=tuple(self.config.dense))  # fmt: skip
        else:
            wants_splade = any(o.name == "splade" for stage in self.config.stages for o in stage.objectives)
            splade = splade_for_training(self.config.model, wants_splade, self.device)
            wants_colbert = any(is_token_level(o.name) for stage in self.config.stages for o in stage.objectives)
            colbert = None if splade else multi_vector_for_training(self.config.model, wants_colbert, self.device)
            model = splade or colbert or SentenceEncoder.load(self.config.model, device=self.device)
        if self.config.max_seq_length is not None:
            model.max_seq_length = self.config.max_seq_length
        if self.config.lora is not None:
            # A head built for this run (--pooling, or a model made in memory, never loaded) has nothing learned yet.
            fresh = self.config.pooling is not None or (self.given_model is not None and model.source_dir is None)
            line = add_lora(model, parse_lora(self.config.lora), fresh_head=fresh)
            if self.world.main:
                print(line, file=sys.stderr)
        if self.config.gradient_checkpointing:
            enable_checkpointing(model)
        return model

    def _run_stage(
        self, model: SentenceEncoder, index: int, stage: Stage, data: StageData, checkpoint: Path | None
    ) -> StageState:
        torch.manual_seed(self.config.seed * 1000 + index)  # heads start the same whatever came before
        prepared = prepare_objectives(model, stage, data.train, self.config.seed, index)
        check_agreement(self.world, self.config, stage, model, prepared)  # before any collective could hang
        for p in prepared:  # the one switch for every batch-level loss (and a Matryoshka wrapper's inner one)
            for loss in p.loss.modules():
                if isinstance(loss, Loss):
                    loss.gather_across_ranks = self.config.gather_across_ranks
        module = TrainModule(model, [p.loss for p in prepared]).to(self.device)
        module.train()  # a loaded encoder is in eval mode: without this, training would run without dropout
        # A batch's padded cost counts every text column, so a token budget means the same for pairs and triplets.
        plan_lengths = [
            InOrder(len(p.dataset)) if p.feed else [n * len(p.columns) for n in p.lengths] for p in prepared
        ]
        self._plan_texts = [p.texts for p in prepared]  # in-batch-negative objectives: no text twice in a batch
        total = sum(len(self._steps(plan_lengths, stage, index, e)) for e in range(stage.epochs))
        total = min(total, stage.max_steps) if stage.max_steps else total
        batches = self._batches_per_set(plan_lengths, stage, index, total, [p.dataset.name for p in prepared])
        fused = self.device.type == "cuda"
        optimizer = build_optimizer(module, stage.lr, stage.weight_decay, fused=fused)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lr_factor(stage.schedule, total, stage.warmup_steps or warmup_steps(total, stage.warmup))
        )
        dtype = autocast_dtype(self.config.precision, self.device)
        progress = Progress(index, 0, 0, self.global_step, 0)
        state = StageState(index, stage, prepared, data.dev, module, optimizer, scheduler, total, dtype, progress,
                           batches)  # fmt: skip
        if checkpoint is not None:
            self._resume(state, checkpoint)
        self._log_stage(state)
        self._epochs(state, plan_lengths)
        if state.dev and state.progress.best_score is not None and self.config.load_best:
            barrier(self.world)
            model.load_state_dict(SentenceEncoder.load(self.output, device=self.device).state_dict())
        return state

    def _resume(self, state: StageState, checkpoint: Path) -> None:
        """Continue a stage from its checkpoint: optimizer, schedule, progress, clock and the log after that step."""
        state.restore(*load_checkpoint(checkpoint))
        retarget_optimizer(state.optimizer, self.device.type == "cuda")  # the checkpoint may come from another device
        self.global_step = state.progress.global_step
        self.started = time.monotonic() - state.progress.elapsed
        self.log.truncate_after(self.global_step)

    def _log_stage(self, state: StageState) -> None:
        """The stage's opening log line: its data, steps, sampling and parameter counts."""
        trainable, parameters = parameter_counts(state.module)  # `total` stays the step count the log records
        prepared = state.prepared
        self.log.write(
            event="stage",
            stage=state.index,
            step=self.global_step,
            total_steps=state.total,
            world=self.world.size,
            data={p.dataset.name: len(p.dataset) for p in prepared},
            truncated=sum(p.truncated for p in prepared),
            sampling=state.stage.sampling,
            batches=state.batches,
            trainable_parameters=trainable,
            total_parameters=parameters,
        )

    def _batches_per_set(
        self, plan_lengths: list[list[int] | InOrder], stage: Stage, index: int, total: int, names: list[str]
    ) -> dict[str, int]:
        """How many batches each training set gets in this stage's `total` steps (the plan is deterministic)."""
        counts = [0] * len(names)
        steps = (step for epoch in range(stage.epochs) for step in self._steps(plan_lengths, stage, index, epoch))
        for step in itertools.islice(steps, total):
            for objective, _ in step:
                counts[objective] += 1
        out: dict[str, int] = {}
        for name, count in zip(names, counts, strict=True):  # one set may feed two objectives
            out[name] = out.get(name, 0) + count
        return out

    def _steps(self, plan_lengths: list[list[int] | InOrder], stage: Stage, index: int, epoch: int) -> list[Step]:
        plan = epoch_plan(
            plan_lengths, stage.batch_size, self.config.seed, index, epoch, stage.length_groups, stage.batch_tokens,
            self._plan_texts, stage.sampling,
        )  # fmt: skip
        if self.world.size > 1:  # a batch with fewer rows than processes cannot be shared (a rank would get none)
            plan = [item for item in plan if len(item[1]) >= self.world.size]
        return [plan[i : i + stage.grad_accum] for i in range(0, len(plan), stage.grad_accum)]

    def _runner(self, state: StageState) -> StepRunner:
        return StepRunner(
            state.module,
            self._wrap(state.module),
            state.optimizer,
            state.scheduler,
            state.scaler,
            state.dtype,
            state.stage.max_grad_norm,
            self.world,
            [p.name for p in state.prepared],
            self._last_good,
            # On CUDA nothing waits for the GPU per step; fp16's grad scaler checks the gradients itself.
            deferred=self.device.type == "cuda" and not state.scaler.is_enabled(),
        )

    def _epochs(self, state: StageState, plan_lengths: list[list[int] | InOrder]) -> None:
        stage, runner = state.stage, self._runner(state)
        bar = tqdm(
            total=state.total,
            initial=state.progress.stage_step,
            disable=not self.show_progress,
            desc=f"stage {state.index + 1}",
            unit="step",
        )
        examples, window_start = 0, time.monotonic()
        for epoch in range(state.progress.epoch, stage.epochs):
            steps = self._steps(plan_lengths, stage, state.index, epoch)
            first = state.progress.step_in_epoch if epoch == state.progress.epoch else 0
            items = [item for step in steps[first:] for item in step]
            with Prefetcher(partial(self._make, state, epoch=epoch), items) as ahead:
                batches = iter(ahead)
                for i in range(first, len(steps)):
                    if state.progress.stage_step >= state.total:
                        break
                    micro = [next(batches).to(self.device) for _ in steps[i]]
                    loss = runner.step(micro, self.global_step + 1)
                    self.global_step += 1
                    examples += sum(len(indices) for _, indices in steps[i])
                    state.advance(epoch, i + 1, self.global_step, self.elapsed())
                    bar.update(1)
                    rate = examples / max(time.monotonic() - window_start, 1e-9)
                    self._after_step(state, runner, bar, steps[i][-1][0], loss, rate)
            runner.check()
            # Each epoch (or a --max-steps cut) ends with a dev score, unless its last step just had one.
            if state.dev and not (stage.eval_steps and state.progress.stage_step % stage.eval_steps == 0):
                self._evaluate(state)
            if state.progress.stage_step >= state.total:
                break
        bar.close()

    def _make(self, state: StageState, item: tuple[int, list[int]], epoch: int) -> StepBatch:
        objective, indices = item
        prepared, cuda = state.prepared[objective], self.device.type == "cuda"
        columns, labels = prepared.columns, prepared.labels
        if prepared.feed is not None:  # a streamed table: this batch's rows, read now (every rank reads them all)
            columns, labels = prepared.feed.take(epoch, indices)
            indices = list(range(len(indices)))
        # On CUDA all columns go through one forward (half the kernel launches), from pinned memory.
        model = state.module.model
        pads = [model.column_pad(c) for c in range(len(columns))]
        fuse = cuda and not state.module.losses[objective].separate_columns
        made = make_batch(pads, columns, labels, objective, shard(indices, self.world), fuse, cuda, prepared.skips)
        made.rank_rows = shard_sizes(len(indices), self.world) if self.world.size > 1 else None
        return with_key_masks(made, model.input_module)

    def _last_good(self) -> str:
        found = checkpoint_dirs(self.run_dir)
        return str(found[-1]) if found else "none"

    def _after_step(
        self, state: StageState, runner: StepRunner, bar: tqdm, objective: int, loss: torch.Tensor, rate: float
    ) -> None:
        step, stage = self.global_step, state.stage
        self._window.append(loss.detach())
        if step % self.config.log_steps == 0 or state.progress.stage_step == state.total:
            runner.check()
            # The only per-step read of the loss: a host sync every log_steps, of the mean over the steps since the
            # last line (as transformers' Trainer logs it); the global batch's loss under torchrun.
            window, self._window = torch.stack(self._window).mean(), []
            value = float(mean_over_ranks(window, self.world))
            bar.set_postfix(loss=f"{value:.4f}", ex_s=f"{rate:.0f}")
            self.log.write(
                event="train",
                stage=state.index,
                step=step,
                objective=state.prepared[objective].name,
                loss=value,  # unrounded: the drop-in trainer's log_history holds it as transformers' does
                lr=runner.step_lr,
                examples_per_s=round(rate, 1),
            )
        if state.dev and stage.eval_steps and state.progress.stage_step % stage.eval_steps == 0:
            runner.check()
            self._evaluate(state)
        if self.config.checkpoint_steps and step % self.config.checkpoint_steps == 0:
            runner.check()
            if self.world.main:
                save_checkpoint(self.run_dir, state.progress, state.states(), self.config.keep_checkpoints)
            barrier(self.world)

    def _evaluate(self, state: StageState) -> None:
        assert state.dev
        if self.world.main:
            result = score_devs(state.module.model, state.dev, state.stage.select)
            metric, score, scores = result.metric, result.score, result.scores
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
        stepped = compiled_step(module, self.config.compile, self.world.size)  # under torchrun: the module, eager
        if self.world.size == 1:
            return stepped
        ids = [self.device.index] if self.device.type == "cuda" else None
        # Only objectives taking turns with their own heads leave parameters without gradients in a step. The buffers
        # (position ids, SPLADE's batch count) are equal on every rank: no broadcast of them before each forward.
        return DistributedDataParallel(module, device_ids=ids, find_unused_parameters=module.needs_unused_parameters(),
                                       broadcast_buffers=False)  # fmt: skip

    def _finish(self, model: SentenceEncoder, state: StageState, seconds: float) -> None:
        if not self.world.main:
            return
        self.log.write(
            event="done", step=self.global_step, seconds=round(seconds, 1), best_score=state.progress.best_score
        )
        curves = dev_curves(self.log.path) if self.log.path.is_file() else {}
        text = card.render(self.config, state, self.global_step, seconds)
        if state.dev and state.progress.best_score is not None:
            card.write_beside(self.output, text, self.log.path)  # the best model is already in place
        else:
            model.save(self.output, extras=lambda path: card.write_into(path, text, self.log.path, state))
        if curves:  # the dev curves beside the log, as a table (`sbert report --train-log` plots them)
            write_curves_csv(curves, self.output / "dev_curves.csv")


def refuse_held_int8(model: torch.nn.Module) -> None:
    """A one-line error for a model whose Linears are held in int8 (loaded with dtype="int8"): no gradients there."""
    from sbert.backends.torch_int8 import holds_int8

    if holds_int8(model):
        raise SbertError("this model holds its Linear weights in int8 (loaded with dtype='int8'), for inference "
                            "only: load it without dtype to train")  # fmt: skip


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
