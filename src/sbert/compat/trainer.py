"""`SentenceTransformerTrainer`: sentence-transformers' training API run by sbert's one training engine.

    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=ds, loss=loss, evaluator=ev)
    trainer.train()

The datasets are read by position (compat/train_data.py), the arguments mapped once
(compat/args_map.py), and the run is `sbert.training.Trainer`'s: the same batching, gathers, checkpoints
and resume as `sbert train`. The model is trained in place; the engine's log lines reach
`trainer.state.log_history` and the callbacks as transformers' Trainer writes them.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from transformers.trainer_callback import TrainerCallback, TrainerControl, TrainerState
from transformers.trainer_utils import TrainOutput

from sbert.compat.args_map import EngineSettings, engine_settings, warn_unused
from sbert.compat.train_data import by_position, table_columns
from sbert.compat.training_args import SentenceTransformerTrainingArguments
from sbert.data.common import Dataset
from sbert.errors import SbertError
from sbert.evaluation.evaluators.base import SentenceEvaluator, SequentialEvaluator
from sbert.formats.layout import write_json_atomic
from sbert.losses import CoSENTLoss, Loss, MultipleNegativesRankingLoss
from sbert.renamed_kwargs import renamed_kwargs
from sbert.training.checkpoint import checkpoint_dirs
from sbert.training.config import Objective, Stage, TrainConfig
from sbert.training.eval_loss import dataset_loss
from sbert.training.trainer import Trainer

LossArg = Loss | Callable[[Any], Loss] | Mapping[str, Loss | Callable[[Any], Loss]] | None


class EvaluatorDev:
    """An evaluator as one of the engine's dev sets: the metric that selects checkpoints, and every value."""

    def __init__(self, evaluator: SentenceEvaluator, metric: str | None, owner: Any) -> None:
        self.evaluator, self.metric, self.owner = evaluator, metric, owner
        self.last: dict[str, float] = {}

    def dev_scores(self, model: Any) -> tuple[str, dict[str, float]]:
        """Run the evaluator on the model being trained (the drop-in object itself)."""
        self.last = self.evaluator(self.owner)
        metric = self.metric or self.evaluator.primary_metric or next(iter(self.last))
        if metric not in self.last:
            raise SbertError(f"metric_for_best_model={metric!r}: the evaluator gives {', '.join(self.last)}")
        return metric, self.last


class SentenceTransformerTrainer:
    """Trains a SentenceTransformer on one or several tables with sentence-transformers' arguments."""

    model_class: type = object  # SentenceTransformer, set by sbert.compat (this module does not import the model's)
    training_args_class = SentenceTransformerTrainingArguments

    @renamed_kwargs(tokenizer="processing_class")
    def __init__(
        self,
        model: Any = None,
        args: Any = None,
        train_dataset: Any = None,
        eval_dataset: Any = None,
        loss: LossArg = None,
        evaluator: SentenceEvaluator | list[SentenceEvaluator] | None = None,
        data_collator: Any = None,
        processing_class: Any = None,
        model_init: Callable[[], Any] | None = None,
        compute_metrics: Any = None,
        callbacks: list[TrainerCallback] | None = None,
        optimizers: tuple[Any, Any] = (None, None),
        optimizer_cls_and_kwargs: Any = None,
        preprocess_logits_for_metrics: Any = None,
    ) -> None:
        if model is None and model_init is None:
            raise SbertError("SentenceTransformerTrainer needs model= (or model_init=)")
        self.model = model if model is not None else model_init()  # type: ignore[misc]
        self.args = args if args is not None else self.training_args_class(output_dir="trainer_output")
        if train_dataset is None:
            raise SbertError("SentenceTransformerTrainer needs train_dataset=")
        self.train_dataset, self.eval_dataset = train_dataset, eval_dataset
        self.evaluator = SequentialEvaluator(evaluator) if isinstance(evaluator, list) else evaluator
        self.callbacks = list(callbacks or [])
        ignored = {"data_collator": data_collator, "compute_metrics": compute_metrics,
                   "optimizers": None if optimizers == (None, None) else optimizers,
                   "optimizer_cls_and_kwargs": optimizer_cls_and_kwargs,
                   "preprocess_logits_for_metrics": preprocess_logits_for_metrics}  # fmt: skip
        named = [k for k, v in ignored.items() if v is not None]
        if named:  # the engine builds its own batches and optimizer: these would change nothing
            raise SbertError(f"SentenceTransformerTrainer({named[0]}=...) is not supported by sbert's engine")
        warn_unused(self.args)
        if eval_dataset is not None and evaluator is None:  # evaluate() reads it; the training loop does not
            warnings.warn("SentenceTransformerTrainer: eval_dataset gives evaluate() its eval_loss; during training "
                          "sbert's engine selects checkpoints by an evaluator (pass one)", UserWarning,
                          stacklevel=2)  # fmt: skip
        if processing_class is not None:  # the model's own tokenizer tokenizes
            warnings.warn("SentenceTransformerTrainer: processing_class is not read by sbert's engine", UserWarning,
                          stacklevel=2)  # fmt: skip
        self.loss = self._losses(loss)
        self.state = TrainerState()
        self.control = TrainerControl()

    def _sets(self, data: Any) -> dict[str, Any]:
        """The training sets by name: a DatasetDict or dict of tables, or one table (named "train")."""
        if isinstance(data, Mapping) and all(not isinstance(v, list) for v in data.values()):
            return dict(data)
        return {"train": data}

    def _losses(self, loss: LossArg) -> dict[str, Loss]:
        """One loss per training set: a dict of losses, one loss for all, a factory, or the default (CoSENT/MNRL)."""
        sets = self._sets(self.train_dataset)
        if isinstance(loss, Mapping):
            missing = [name for name in sets if name not in loss]
            if missing:
                raise SbertError(f"loss has no entry for training set {missing[0]!r} (sets: {', '.join(sets)})")
            chosen = {name: loss[name] for name in sets}
        else:
            chosen = {name: loss if loss is not None else self._default_loss(sets[name]) for name in sets}
        built = {name: value if isinstance(value, Loss) else value(self.model) for name, value in chosen.items()}
        for name, value in built.items():
            if not isinstance(value, Loss):
                raise SbertError(f"loss for {name!r} is a {type(value).__name__}: use a loss from sbert.losses")
            if value.model is not None and value.model is not self.model:
                raise SbertError(f"the loss for {name!r} was built on another model than the trainer's")
        return built

    def _default_loss(self, data: Any) -> Loss:
        """CoSENT, 6.2's default, for a labelled table; MNRL for unlabelled rows, which CoSENT cannot train."""
        columns = table_columns(data, "train")
        labelled = "label" in columns or "score" in columns
        return CoSENTLoss(self.model) if labelled else MultipleNegativesRankingLoss(self.model)

    def _datasets(self) -> dict[str, Dataset]:
        """Each training set as sbert's Dataset, read by position for its loss, with the arguments' prompts."""
        sets = {name: by_position(data, name, self.loss[name], self.args.prompts)
                for name, data in self._sets(self.train_dataset).items()}  # fmt: skip
        if "image" not in getattr(self.model, "modalities", ["text"]):
            for name, dataset in sets.items():
                if any(not isinstance(v, str) for v in dataset.texts[0]):
                    raise SbertError(f"training set {name!r} holds images: train an image-text model (CLIP, SigLIP) "
                                     "on it; this one embeds text only")  # fmt: skip
        return sets

    def _steps_per_epoch(self, sets: dict[str, Dataset]) -> int:
        """Optimizer steps in one pass over every set (fractional epochs, save_strategy="epoch")."""
        batch = self.args.per_device_train_batch_size
        batches = sum(math.ceil(len(d) / batch) for d in sets.values())
        return max(1, math.ceil(batches / self.args.gradient_accumulation_steps))

    def train(self, resume_from_checkpoint: str | bool | None = None, trial: Any = None,
              ignore_keys_for_eval: list[str] | None = None, **kwargs: Any) -> TrainOutput:  # fmt: skip
        """Train the model in place; returns transformers' TrainOutput (global step, mean loss, run metrics)."""
        self._check_resume(bool(resume_from_checkpoint))
        sets = self._datasets()
        per_epoch = self._steps_per_epoch(sets)
        settings = engine_settings(self.args, per_epoch, self.evaluator is not None)
        dev = EvaluatorDev(self.evaluator, settings.metric_for_best, self.model) if self.evaluator else None
        given: dict[str, Any] = {f"memory:{name}": data for name, data in sets.items()}
        if dev is not None and settings.evaluate_during_training:
            given["evaluator:dev"] = dev
        stage = Stage(
            tuple(Objective(type(self.loss[n]).__name__, f"memory:{n}", loss=self.loss[n]) for n in sets),
            dev="evaluator:dev" if "evaluator:dev" in given else None,
            **settings.stage,
        )
        config = TrainConfig(model="(a model in memory)", output=str(self.args.output_dir), stages=(stage,),
                             **settings.run)  # fmt: skip
        self._begin(settings, per_epoch)
        started = time.monotonic()
        engine = Trainer(config, show_progress=not self.args.disable_tqdm, datasets=given, model=self.model,
                         on_record=lambda record: self._on_record(record, dev, per_epoch))  # fmt: skip
        result = engine.run(resume=bool(resume_from_checkpoint))
        return self._end(result.steps, time.monotonic() - started, sum(len(d) for d in sets.values()))

    def _check_resume(self, resume: bool) -> None:
        """Checkpoints of an earlier run beside output_dir: say how to continue it or start over."""
        kept = Path(f"{self.args.output_dir}.run")
        if not resume and checkpoint_dirs(kept):
            raise SbertError(f"{kept} holds checkpoints of an earlier run: trainer.train(resume_from_checkpoint=True) "
                             "continues it; remove that folder to start over")  # fmt: skip

    def _begin(self, settings: EngineSettings, per_epoch: int) -> None:
        self.state = TrainerState(logging_steps=settings.run["log_steps"], eval_steps=settings.stage["eval_steps"],
                                  save_steps=settings.run["checkpoint_steps"],
                                  train_batch_size=self.args.per_device_train_batch_size,
                                  num_train_epochs=settings.stage["epochs"])  # fmt: skip
        self.state.max_steps = settings.stage["max_steps"] or per_epoch * settings.stage["epochs"]
        self._losses_seen: list[float] = []
        self._event("on_train_begin")

    def _event(self, name: str, **kwargs: Any) -> None:
        for callback in self.callbacks:
            getattr(callback, name)(self.args, self.state, self.control, model=self.model, **kwargs)

    def _on_record(self, record: dict[str, Any], dev: EvaluatorDev | None, per_epoch: int) -> None:
        """A log line of the engine as transformers' Trainer logs it: into log_history and the callbacks."""
        step = int(record.get("step", 0))
        self.state.global_step, self.state.epoch = step, step / per_epoch
        if record.get("event") == "train":
            self._losses_seen.append(float(record["loss"]))
            self.log({"loss": float(record["loss"]), "learning_rate": float(record["lr"])})
        elif record.get("event") == "eval" and dev is not None:
            metrics = {f"eval_{k}": v for k, v in dev.last.items()}
            if record.get("best"):
                self.state.best_metric, self.state.best_global_step = float(record["score"]), step
                self.state.best_model_checkpoint = str(self.args.output_dir)
            self.log(metrics)
            self._event("on_evaluate", metrics=metrics)

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """Add `logs` (with epoch and step) to state.log_history and hand them to the callbacks' on_log."""
        entry = {**logs, "epoch": round(self.state.epoch or 0.0, 4), "step": self.state.global_step}
        self.state.log_history.append(entry)
        self._event("on_log", logs=logs)

    def _end(self, steps: int, seconds: float, examples: int) -> TrainOutput:
        epochs = self.state.num_train_epochs
        mean_loss = sum(self._losses_seen) / len(self._losses_seen) if self._losses_seen else 0.0
        metrics = {"train_runtime": round(seconds, 4),
                   "train_samples_per_second": round(examples * epochs / seconds, 3),
                   "train_steps_per_second": round(steps / seconds, 3), "total_flos": 0.0,
                   "train_loss": mean_loss}  # fmt: skip
        self.log(metrics)
        self._event("on_train_end")
        return TrainOutput(steps, mean_loss, metrics)

    def evaluate(self, eval_dataset: Any = None, ignore_keys: list[str] | None = None,
                 metric_key_prefix: str = "eval") -> dict[str, float]:  # fmt: skip
        """`{prefix}_loss` on the eval dataset (`{prefix}_{set}_loss` per set of a dict) and the evaluator's metrics.

        The loss is the training loss's forward without a gradient (training/eval_loss.py); the evaluator's
        metrics are keyed `{prefix}_{name}_{metric}`. Both are logged as in training.
        """
        data = eval_dataset if eval_dataset is not None else self.eval_dataset
        if self.evaluator is None and data is None:
            raise SbertError("evaluate() needs an eval_dataset (for eval_loss) or an evaluator")
        metrics = self._eval_losses(data, metric_key_prefix) if data is not None else {}
        if self.evaluator is not None:
            metrics |= {f"{metric_key_prefix}_{k}": v for k, v in self.evaluator(self.model).items()}
        self.log(metrics)
        self._event("on_evaluate", metrics=metrics)
        return metrics

    def _eval_losses(self, data: Any, prefix: str) -> dict[str, float]:
        """The mean loss of each eval set, with the loss its training set of the same name (or the only one) has."""
        sets = self._sets(data)
        metrics = {}
        for name, table in sets.items():
            loss = self.loss.get(name) if len(self.loss) > 1 else next(iter(self.loss.values()))
            if loss is None:
                raise SbertError(f"eval_dataset {name!r} has no training set of that name, so no loss to compute")
            dataset = by_position(table, name, loss, self.args.prompts)
            key = f"{prefix}_loss" if len(sets) == 1 and not isinstance(data, Mapping) else f"{prefix}_{name}_loss"
            metrics[key] = dataset_loss(self.model, loss, dataset, self.args.per_device_eval_batch_size)
        return metrics

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False) -> None:
        """Save the model (sentence-transformers' layout) to `output_dir` (the arguments' by default)."""
        self.model.save(str(output_dir or self.args.output_dir))

    def add_callback(self, callback: TrainerCallback | type[TrainerCallback]) -> None:
        """Add a callback (an instance, or a class to instantiate)."""
        self.callbacks.append(callback() if isinstance(callback, type) else callback)

    def remove_callback(self, callback: TrainerCallback | type[TrainerCallback]) -> None:
        """Remove a callback (an instance, or every instance of a class)."""
        self.callbacks = [c for c in self.callbacks if c is not callback and type(c) is not callback]

    def pop_callback(self, callback: TrainerCallback | type[TrainerCallback]) -> TrainerCallback | None:
        """Remove and return a callback (an instance, or the first of a class), or None."""
        found = next((c for c in self.callbacks if c is callback or type(c) is callback), None)
        if found is not None:
            self.callbacks.remove(found)
        return found

    def is_world_process_zero(self) -> bool:
        """Whether this process is the main one (under torchrun, rank 0)."""
        return int(os.environ.get("RANK", "0")) == 0

    def is_local_process_zero(self) -> bool:
        """Whether this process is the main one on its machine."""
        return int(os.environ.get("LOCAL_RANK", "0")) == 0

    def get_num_trainable_parameters(self) -> int:
        """How many of the model's parameters train."""
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)

    def log_metrics(self, split: str, metrics: dict[str, float]) -> None:
        """Print `metrics` of `split`, one per line."""
        print(f"***** {split} metrics *****")
        for key in sorted(metrics):
            print(f"  {key} = {metrics[key]}")

    def save_metrics(self, split: str, metrics: dict[str, float], combined: bool = True) -> None:
        """Write `metrics` to output_dir/{split}_results.json (atomically)."""
        write_json_atomic(Path(self.args.output_dir) / f"{split}_results.json", metrics)

    def get_default_loss(self, model: Any) -> Loss:
        """sentence-transformers 6.2's default: CoSENT."""
        return CoSENTLoss(model)

    @property
    def output_dir(self) -> Path:
        """Where the run writes."""
        return Path(self.args.output_dir)
