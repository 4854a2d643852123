"""The legacy `model.fit(train_objectives=[(DataLoader(InputExample...), loss)])`, on the same trainer and engine.

Each DataLoader's examples become a table (texts by position, the label where one is set), each with its
loss; fit's arguments map onto SentenceTransformerTrainingArguments, so what they mean is decided in
compat/args_map.py as for the trainer.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from sbert.compat.training_args import BatchSamplers, MultiDatasetBatchSamplers, SentenceTransformerTrainingArguments
from sbert.data.examples import InputExample
from sbert.errors import SbertError


@dataclass
class FitOptions:
    """fit's settings other than the objectives (sentence-transformers' names and defaults)."""

    evaluator: Any = None
    epochs: int = 1
    steps_per_epoch: int | None = None
    scheduler: str = "WarmupLinear"
    warmup_steps: int = 10000
    optimizer_class: type[torch.optim.Optimizer] = torch.optim.AdamW
    optimizer_params: dict[str, Any] = field(default_factory=lambda: {"lr": 2e-5})
    weight_decay: float = 0.01
    evaluation_steps: int = 0
    output_path: str | None = None
    save_best_model: bool = True
    max_grad_norm: float = 1
    use_amp: bool = False
    callback: Callable[[float, int, int], None] | None = None
    show_progress_bar: bool = True
    checkpoint_path: str | None = None
    checkpoint_save_steps: int = 500
    checkpoint_save_total_limit: int = 0
    resume_from_checkpoint: bool = False


def examples_table(loader: Any, index: int) -> dict[str, list[Any]]:
    """A DataLoader of InputExamples as columns: sentence_0, sentence_1, ... and a label unless every label is 0."""
    source = getattr(loader, "dataset", loader)
    # A map-style dataset is read by index up to its length (ParallelSentencesDataset draws as it is read).
    indexed = hasattr(source, "__len__") and hasattr(source, "__getitem__") and not isinstance(source, list)
    items = [source[i] for i in range(len(source))] if indexed else list(source)
    # A loader without a dataset (ContrastiveTensionDataLoader) yields batches: their examples, in order.
    examples = [e for item in items for e in item] if items and all(isinstance(i, list) for i in items) else items
    if not examples or not all(isinstance(e, InputExample) and e.texts for e in examples):
        raise SbertError(f"train_objectives[{index}]: a DataLoader over InputExample(texts=[...], label=...) items")
    width = len(examples[0].texts or [])
    if any(len(e.texts or []) != width for e in examples):
        raise SbertError(f"train_objectives[{index}]: every InputExample needs {width} texts")
    table: dict[str, list[Any]] = {f"sentence_{c}": [(e.texts or [])[c] for e in examples] for c in range(width)}
    labels = [e.label for e in examples]
    if any(np.any(np.asarray(label) != 0) for label in labels):  # a label may be a teacher's vector
        table["label"] = labels
    return table


# fit()'s scheduler names, as 6.2's fit maps them onto transformers' schedules (training/schedule.py).
FIT_SCHEDULES = {"constantlr": "constant", "warmupconstant": "constant_with_warmup", "warmuplinear": "linear",
                 "warmupcosine": "cosine"}  # fmt: skip


def _warn_unmapped(options: FitOptions) -> None:
    unused = []
    if options.scheduler.lower() not in FIT_SCHEDULES:
        unused.append(f"scheduler={options.scheduler!r} (sbert runs {', '.join(FIT_SCHEDULES)}; WarmupLinear here)")
    if options.optimizer_class is not torch.optim.AdamW:
        unused.append(f"optimizer_class={options.optimizer_class.__name__} (sbert runs AdamW)")
    if set(options.optimizer_params) - {"lr"}:
        unused.append(f"optimizer_params {sorted(set(options.optimizer_params) - {'lr'})}")
    if unused:
        warnings.warn(f"fit(): sbert's training engine has no meaning for: {'; '.join(unused)}", UserWarning,
                      stacklevel=3)  # fmt: skip


def fit(
    model: Any, train_objectives: Iterable[tuple[Any, Any]], options: FitOptions, trainer_class: Any = None
) -> None:
    """Train `model` in place on every (DataLoader, loss) pair, as sentence-transformers' fit does.

    `trainer_class` is the drop-in trainer that runs it (SentenceTransformerTrainer unless given).
    """
    from sbert.compat.trainer import SentenceTransformerTrainer

    trainer_class = trainer_class or SentenceTransformerTrainer
    pairs = list(train_objectives)
    _warn_unmapped(options)
    tables = {f"_dataset_{i}": examples_table(loader, i) for i, (loader, _) in enumerate(pairs, start=1)}
    losses = {f"_dataset_{i}": loss for i, (_, loss) in enumerate(pairs, start=1)}
    no_duplicates = any(type(loader).__name__ == "NoDuplicatesDataLoader" for loader, _ in pairs)
    batch = next((b for b in (getattr(loader, "batch_size", None) for loader, _ in pairs) if b), 8)
    scratch = None if options.output_path or options.checkpoint_path else tempfile.mkdtemp(prefix="sbert-fit-")
    evaluate = options.evaluator is not None
    args = SentenceTransformerTrainingArguments(
        output_dir=options.output_path or options.checkpoint_path or scratch,
        per_device_train_batch_size=batch, num_train_epochs=options.epochs,
        max_steps=options.steps_per_epoch if options.steps_per_epoch and options.epochs == 1 else -1,
        warmup_steps=options.warmup_steps, lr_scheduler_type=FIT_SCHEDULES.get(options.scheduler.lower(), "linear"),
        learning_rate=float(options.optimizer_params.get("lr", 2e-5)),
        weight_decay=options.weight_decay, max_grad_norm=options.max_grad_norm,
        fp16=options.use_amp and torch.cuda.is_available(), disable_tqdm=not options.show_progress_bar,
        batch_sampler=BatchSamplers.NO_DUPLICATES if no_duplicates else BatchSamplers.BATCH_SAMPLER,
        multi_dataset_batch_sampler=MultiDatasetBatchSamplers.ROUND_ROBIN,
        eval_strategy=("steps" if options.evaluation_steps > 0 else "epoch") if evaluate else "no",
        eval_steps=options.evaluation_steps or None,
        save_strategy="steps" if options.checkpoint_path else "no", save_steps=options.checkpoint_save_steps,
        save_total_limit=options.checkpoint_save_total_limit or None,
        load_best_model_at_end=False, logging_steps=max(1, options.evaluation_steps or 500),
    )  # fmt: skip
    trainer = trainer_class(model=model, args=args, train_dataset=tables, loss=losses, evaluator=options.evaluator)
    if options.callback is not None:
        trainer.add_callback(_ScoreCallback(options.callback, trainer))
    try:
        trainer.train(resume_from_checkpoint=options.resume_from_checkpoint)
        if options.output_path and not (evaluate and options.save_best_model):
            model.save(options.output_path)  # with an evaluator the engine already saved the best state there
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def fit_cross_encoder(model: Any, loader: Any, loss_fct: Any, activation_fct: Any, options: FitOptions) -> None:
    """The cross-encoder's legacy fit: one DataLoader of (text, text, label) InputExamples, on CrossEncoderTrainer.

    No `loss_fct`: BCE for a one-output model, cross-entropy otherwise, each after `activation_fct`;
    a torch loss (nn.MSELoss(), nn.BCEWithLogitsLoss(), ...) is applied to the activated logits and labels.
    """
    from sbert.compat.cross_trainer import CrossEncoderTrainer
    from sbert.losses.pair_logits import BinaryCrossEntropyLoss, CrossEntropyLoss, PairLogitLoss, TorchPairLoss

    loss: PairLogitLoss
    if loss_fct is not None:
        loss = TorchPairLoss(model, loss_fct, activation_fct)
    elif model.num_labels == 1:
        loss = BinaryCrossEntropyLoss(model, activation_fn=activation_fct)
    else:
        loss = CrossEntropyLoss(model, activation_fn=activation_fct)
    fit(model, [(loader, loss)], options, CrossEncoderTrainer)


class _ScoreCallback:
    """fit's `callback(score, epoch, steps)` after each evaluation, from the trainer's on_evaluate."""

    def __init__(self, callback: Callable[[float, int, int], None], trainer: Any) -> None:
        self.callback, self.trainer = callback, trainer

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None  # the other events: nothing to do

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: dict[str, float], **kwargs: Any) -> None:
        """Hand fit's callback the primary metric, the epoch and the step."""
        primary = self.trainer.evaluator.primary_metric
        self.callback(float(metrics.get(f"eval_{primary}", next(iter(metrics.values())))), int(state.epoch or 0),
                      state.global_step)  # fmt: skip
