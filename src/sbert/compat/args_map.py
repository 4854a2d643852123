"""SentenceTransformerTrainingArguments onto sbert's engine: each field's meaning there, or one warning.

What a field means is decided here once, for the trainer and for the legacy `fit`; a field set away
from its default that the engine has no meaning for is named in one warning, never ignored silently.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, fields
from typing import Any

from sbert.compat.training_args import BatchSamplers, MultiDatasetBatchSamplers, SentenceTransformerTrainingArguments
from sbert.training.schedule import SCHEDULES

# Fields the mapping reads (their meaning is in `engine_settings`), and fields with no effect on what is trained
# (where to report, how to show progress, hub and logging paths): neither is warned about.
MAPPED = {
    "output_dir", "num_train_epochs", "max_steps", "per_device_train_batch_size", "learning_rate", "warmup_steps",
    "warmup_ratio", "weight_decay", "max_grad_norm", "seed", "fp16", "bf16", "gradient_accumulation_steps",
    "batch_sampler", "multi_dataset_batch_sampler", "eval_strategy", "eval_steps", "save_strategy", "save_steps",
    "save_total_limit", "logging_steps", "logging_strategy", "load_best_model_at_end", "metric_for_best_model",
    "prompts", "length_groups", "run_name", "report_to", "disable_tqdm", "lr_scheduler_type", "optim",
    "per_device_eval_batch_size", "data_seed", "use_cpu", "gradient_checkpointing", "torch_compile",
    "torch_compile_backend",
}  # fmt: skip
NO_EFFECT = {
    "overwrite_output_dir", "logging_dir", "logging_first_step", "logging_nan_inf_filter", "push_to_hub",
    "hub_model_id", "hub_strategy", "hub_token", "hub_private_repo", "hub_always_push", "hub_revision",
    "dataloader_num_workers",
    "dataloader_pin_memory", "dataloader_persistent_workers", "dataloader_prefetch_factor", "save_safetensors",
    "save_only_model", "log_level", "log_level_replica", "log_on_each_node", "remove_unused_columns",
    "label_names", "include_num_input_tokens_seen", "skip_memory_metrics", "trackio_space_id", "project",
    "do_train", "do_eval", "do_predict", "prediction_loss_only", "eval_on_start", "greater_is_better",
    "ddp_find_unused_parameters", "ddp_backend", "ddp_timeout", "local_rank", "tf32",
    "eval_accumulation_steps", "eval_delay", "eval_do_concat_batches", "ignore_data_skip", "full_determinism",
    "adam_beta1", "adam_beta2", "adam_epsilon",
}  # fmt: skip
ADAM = {"adam_beta1": 0.9, "adam_beta2": 0.999, "adam_epsilon": 1e-8}  # torch's AdamW defaults, which sbert runs
ADAMW = ("adamw_torch", "adamw_torch_fused", "adamw_hf")


@dataclass(frozen=True)
class EngineSettings:
    """The engine's Stage and TrainConfig fields for these arguments, and what is evaluated and selected."""

    stage: dict[str, Any]
    run: dict[str, Any]
    evaluate_during_training: bool
    metric_for_best: str | None


def unused_fields(args: Any) -> list[str]:
    """The fields set away from their default that sbert's engine has no meaning for (or only partly)."""
    default = SentenceTransformerTrainingArguments(output_dir=args.output_dir)
    # A field of a subclass's own (6.2's multi-vector max_length) counts as changed when set at all.
    changed = [f.name for f in fields(args) if getattr(args, f.name) != getattr(default, f.name, None)]
    out = [n for n in changed if n not in MAPPED and n not in NO_EFFECT]
    out += [n for n, v in ADAM.items() if getattr(args, n) != v]
    if _schedule(args) not in SCHEDULES:
        out.append(f"lr_scheduler_type={args.lr_scheduler_type!r} (sbert runs {', '.join(SCHEDULES)})")
    if str(args.optim) not in ADAMW:
        out.append(f"optim={args.optim!r} (sbert runs AdamW)")
    if args.batch_sampler == BatchSamplers.GROUP_BY_LABEL or callable(args.batch_sampler):
        out.append(f"batch_sampler={args.batch_sampler!r} (sbert batches at random, or without duplicates)")
    if args.router_mapping or args.learning_rate_mapping:
        out.append("router_mapping / learning_rate_mapping")
    if args.report_to and args.report_to not in (["none"], ["all"]):
        out.append(f"report_to={args.report_to} (sbert writes train_log.jsonl; callbacks see every log line)")
    return out


def warn_unused(args: Any) -> None:
    """One warning naming every field the engine ignores, if any."""
    unused = unused_fields(args)
    if unused:
        warnings.warn(f"sbert's training engine has no meaning for: {'; '.join(unused)} (docs/migrating.md)",
                      UserWarning, stacklevel=3)  # fmt: skip


def _schedule(args: Any) -> str:
    """Transformers' lr_scheduler_type as its plain name (an enum's value)."""
    return str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type))


def _warmup(args: Any) -> dict[str, Any]:
    """Transformers 5's warmup_steps: a share of the steps below 1, a count from 1 (0.1 sbert's own default)."""
    steps = args.warmup_steps
    if 0 < steps < 1:
        return {"warmup": float(steps), "warmup_steps": 0}
    return {"warmup": 0.0, "warmup_steps": int(steps)}


def engine_settings(args: Any, steps_per_epoch: int, evaluator: bool) -> EngineSettings:
    """The engine's settings; `steps_per_epoch` (optimizer steps) turns fractional epochs into a step cap."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    epochs, max_steps = math.ceil(args.num_train_epochs), 0
    if args.max_steps > 0:  # transformers: max_steps wins over epochs, and the data repeats as needed
        max_steps = int(args.max_steps)
        epochs = max(1, math.ceil(max_steps / max(steps_per_epoch, 1)))
    elif epochs != args.num_train_epochs:
        max_steps = math.ceil(args.num_train_epochs * steps_per_epoch)
    during = evaluator and args.eval_strategy != "no"
    stage = {
        "epochs": max(epochs, 1), "max_steps": max_steps, "batch_size": args.per_device_train_batch_size * world,
        "lr": args.learning_rate, "weight_decay": args.weight_decay, "max_grad_norm": args.max_grad_norm,
        "grad_accum": args.gradient_accumulation_steps, "length_groups": args.length_groups,
        "allow_duplicates": args.batch_sampler not in (BatchSamplers.NO_DUPLICATES, BatchSamplers.NO_DUPLICATES_HASHED),
        "sampling": "round-robin" if args.multi_dataset_batch_sampler == MultiDatasetBatchSamplers.ROUND_ROBIN
        else "proportional",
        "eval_steps": int(args.eval_steps or 0) if during and args.eval_strategy == "steps" else 0,
        **_warmup(args),
        "schedule": _schedule(args) if _schedule(args) in SCHEDULES else "linear",
    }  # fmt: skip
    save_every = {"steps": int(args.save_steps), "epoch": steps_per_epoch}.get(str(args.save_strategy), 0)
    run = {
        "seed": args.seed, "precision": "bf16" if args.bf16 else "fp16" if args.fp16 else "fp32",
        "log_steps": max(1, int(args.logging_steps)) if args.logging_strategy == "steps" else max(steps_per_epoch, 1),
        "checkpoint_steps": save_every, "keep_checkpoints": args.save_total_limit or 1_000_000,
        "load_best": bool(args.load_best_model_at_end), "gradient_checkpointing": bool(args.gradient_checkpointing),
        "device": "cpu" if args.use_cpu else None,
        "compile": (args.torch_compile_backend or "inductor") if args.torch_compile else "",
    }  # fmt: skip
    metric = args.metric_for_best_model.removeprefix("eval_") if args.metric_for_best_model else None
    return EngineSettings(stage, run, during, metric)
