"""`CrossEncoderTrainer`: sentence-transformers 6.2's reranker training API on sbert's cross-encoder training.

    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=ds, loss=BinaryCrossEntropyLoss(model))
    trainer.train()

Columns are read by position as 6.2 reads them (first text, second text, then `label` / `score`);
the arguments are mapped once (compat/args_map.py) onto `training/cross_encoder.run_cross_fit`, the
loop `sbert train-cross-encoder` runs. State, callbacks, `log_history`, `evaluate` and saving are the
drop-in SentenceTransformerTrainer's.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import torch
from transformers.trainer_utils import TrainOutput

from sbert.compat.args_map import EngineSettings, engine_settings
from sbert.compat.train_data import LABEL_COLUMNS, table_columns, with_prompts
from sbert.compat.trainer import EvaluatorDev, SentenceTransformerTrainer
from sbert.compat.training_args import SentenceTransformerTrainingArguments
from sbert.errors import SbertError
from sbert.losses.pair_logits import BinaryCrossEntropyLoss, CrossEntropyLoss, PairLogitLoss
from sbert.native import native
from sbert.training.cross_encoder import CrossFitSettings, run_cross_fit


class CrossEncoderTrainingArguments(SentenceTransformerTrainingArguments):
    """The same fields and defaults as SentenceTransformerTrainingArguments (as in 6.2)."""


class CrossEncoderTrainer(SentenceTransformerTrainer):
    """Trains a CrossEncoder on (text, text, label) tables; BCE (one output) or cross-entropy by default."""

    training_args_class = CrossEncoderTrainingArguments

    def _losses(self, loss: Any) -> dict[str, Any]:
        sets = self._sets(self.train_dataset)
        if len(sets) != 1:
            raise SbertError(f"CrossEncoderTrainer trains on one training set here, got {len(sets)}: "
                             f"{', '.join(sets)} (concatenate them)")  # fmt: skip
        if isinstance(loss, dict):
            loss = next(iter(loss.values()))
        built = self.get_default_loss(self.model) if loss is None else loss
        built = built if isinstance(built, torch.nn.Module) else built(self.model)  # a factory of the model
        if not isinstance(built, PairLogitLoss):
            raise SbertError(
                f"loss is a {type(built).__name__}: sbert trains cross-encoders with "
                "BinaryCrossEntropyLoss, CrossEntropyLoss or MSELoss (sbert.cross_encoder.losses)"
            )
        if built.model is not None and built.model is not self.model:
            raise SbertError("the loss was built on another model than the trainer's")
        built.check_labels(self.model.num_labels)
        return {name: built for name in sets}

    def get_default_loss(self, model: Any) -> PairLogitLoss:  # type: ignore[override]
        """6.2's default: BinaryCrossEntropyLoss for a one-output model, else CrossEntropyLoss."""
        return BinaryCrossEntropyLoss(model) if model.num_labels == 1 else CrossEntropyLoss(model)

    def _pairs(self) -> tuple[str, list[tuple[str, str]], torch.Tensor]:
        """The one training set's name, its (first, second) text pairs, and labels as the loss takes them."""
        name, data = next(iter(self._sets(self.train_dataset).items()))
        columns = with_prompts(table_columns(data, name), self.args.prompts, name)
        label = next((c for c in LABEL_COLUMNS if c in columns), None)
        texts = [c for c in columns if c != label]
        if label is None or len(texts) != 2:
            raise SbertError(f"training set {name!r}: a cross-encoder trains on two text columns and a 'label' or "
                             f"'score' column (columns: {', '.join(columns)})")  # fmt: skip
        loss = self.loss[name]
        dtype = torch.long if loss.class_targets else torch.float32
        return name, list(zip(columns[texts[0]], columns[texts[1]], strict=True)), torch.tensor(columns[label],
                                                                                              dtype=dtype)  # fmt: skip

    def train(self, resume_from_checkpoint: str | bool | None = None, trial: Any = None,
              ignore_keys_for_eval: list[str] | None = None, **kwargs: Any) -> TrainOutput:  # fmt: skip
        """Train the model in place; returns transformers' TrainOutput (global step, mean loss, run metrics)."""
        if resume_from_checkpoint:
            raise SbertError("CrossEncoderTrainer: resuming is not supported (cross-encoder runs keep no checkpoints)")
        name, pairs, labels = self._pairs()
        batch = self.args.per_device_train_batch_size
        per_epoch = max(1, -(-len(pairs) // batch))
        settings = engine_settings(self.args, per_epoch, self.evaluator is not None)
        stage, run = settings.stage, settings.run
        fit = CrossFitSettings(epochs=stage["epochs"], batch_size=batch, lr=stage["lr"], seed=run["seed"],
                               warmup=stage["warmup"], weight_decay=stage["weight_decay"],
                               max_grad_norm=stage["max_grad_norm"], warmup_steps=stage["warmup_steps"],
                               max_steps=stage["max_steps"], log_steps=run["log_steps"],
                               eval_steps=_eval_every(settings, per_epoch))  # fmt: skip
        _warn_unrun(stage, run)
        dev = EvaluatorDev(self.evaluator, settings.metric_for_best, self.model) if self.evaluator else None
        self._begin(settings, per_epoch)
        started = time.monotonic()

        def on_record(record: dict[str, Any]) -> None:
            if record["event"] == "eval" and dev is not None:
                dev.dev_scores(self.model)
            self._on_record(record, dev, per_epoch)

        run_cross_fit(native(self.model), pairs, labels, self.loss[name], fit, on_record)
        return self._end(self.state.global_step, time.monotonic() - started, len(pairs))


def _eval_every(settings: EngineSettings, per_epoch: int) -> int:
    """Steps between evaluations: eval_steps, or one epoch for eval_strategy="epoch" (0: no evaluation)."""
    if not settings.evaluate_during_training:
        return 0
    return int(settings.stage["eval_steps"]) or per_epoch


def _warn_unrun(stage: dict[str, Any], run: dict[str, Any]) -> None:
    """One warning naming the mapped settings the cross-encoder loop does not run (fp32, no checkpoints)."""
    unrun = [name for name, value, default in (
        ("gradient_accumulation_steps", stage["grad_accum"], 1), ("fp16/bf16", run["precision"], "fp32"),
        ("save_strategy/save_steps", run["checkpoint_steps"], 0), ("load_best_model_at_end", run["load_best"], False),
        ("gradient_checkpointing", run["gradient_checkpointing"], False),
    ) if value != default]  # fmt: skip
    if unrun:
        warnings.warn(f"sbert's cross-encoder training does not run: {', '.join(unrun)} (docs/migrating.md)",
                      UserWarning, stacklevel=3)  # fmt: skip
