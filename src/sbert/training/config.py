"""Training settings: frozen dataclasses, read from CLI flags or a TOML file (multi-stage recipes)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from sbert.errors import SbertError
from sbert.modules.dense import parse_dense
from sbert.modules.poolers import POOLERS
from sbert.training.schedule import SCHEDULES

SAMPLINGS = ("round-robin", "proportional")


@dataclass(frozen=True)
class Objective:
    """One loss on one training set, e.g. regression on `stsb:sts-train.csv`."""

    name: str
    train: str
    options: dict[str, Any] = field(default_factory=dict)
    # A loss built by the caller (the drop-in trainer's `loss=`), used instead of building `name` from `options`.
    loss: Any = field(default=None, compare=False)


@dataclass(frozen=True)
class Stage:
    """A training phase: its objectives take turns batch by batch (round-robin or proportional to size)."""

    objectives: tuple[Objective, ...]
    dev: str | tuple[str, ...] | None = None  # one spec, or several (training/dev_sets.py)
    select: str = ""  # with several dev sets: "SPEC:METRIC" picks the best checkpoint ("" = mean of headlines)
    epochs: int = 1
    batch_size: int = 16
    lr: float = 2e-5
    warmup: float = 0.1  # share of the stage's steps spent warming up
    warmup_steps: int = 0  # > 0: this many warm-up steps instead of the share `warmup`
    schedule: str = "linear"  # the learning-rate curve after warm-up (training/schedule.py SCHEDULES)
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    eval_steps: int = 0  # 0: evaluate at the end of each epoch only
    max_steps: int = 0  # 0: no cap (benchmarks use it to bound time)
    length_groups: int = 50  # batches per length-sorted window; 1 = plain random batches
    batch_tokens: int = 0  # > 0: batches hold this many padded tokens (all text columns) instead of batch_size examples
    grad_accum: int = 1  # batches whose gradients add up to one optimizer step
    allow_duplicates: bool = False  # True: in-batch-negative objectives may see a text twice in a batch
    matryoshka: str = ""  # "384,256,128,64" (DIM[:WEIGHT],...): every objective also trained on those prefixes
    sampling: str = "round-robin"  # or "proportional": the order objectives take turns in (training/epoch_plan.py)

    def validate(self) -> None:
        """Refuse settings that cannot train, before any work starts."""
        if not self.objectives:
            raise SbertError("a stage needs at least one objective with --train data")
        from sbert.losses import check_objective

        for objective in self.objectives:  # before any data is read: a typo fails at once
            if objective.loss is None:
                check_objective(objective.name)
        checks = {
            "epochs": self.epochs >= 1,
            "batch_size": self.batch_size >= 1,
            "lr": self.lr > 0,
            "warmup": 0 <= self.warmup < 1,
            "warmup_steps": self.warmup_steps >= 0,
            "schedule": self.schedule in SCHEDULES,
            "weight_decay": self.weight_decay >= 0,
            "max_grad_norm": self.max_grad_norm > 0,
            "eval_steps": self.eval_steps >= 0,
            "max_steps": self.max_steps >= 0,
            "length_groups": self.length_groups >= 1,
            "batch_tokens": self.batch_tokens >= 0,
            "grad_accum": self.grad_accum >= 1,
        }
        for name, ok in checks.items():
            if not ok:
                raise SbertError(f"{name}={getattr(self, name)!r} is out of range")
        check_select(self.select, self.dev)
        if self.sampling not in SAMPLINGS:
            raise SbertError(f"sampling={self.sampling!r}: use {' or '.join(SAMPLINGS)}")
        if self.matryoshka:
            from sbert.losses.matryoshka import parse_matryoshka

            parse_matryoshka(self.matryoshka)


@dataclass(frozen=True)
class TrainConfig:
    """A whole run: starting model, stages in order, and run-level settings."""

    model: str
    output: str
    stages: tuple[Stage, ...]
    seed: int = 0
    pooling: str | None = None  # a fresh head on the transformer: any Pooling mode (lasttoken, ...), cnn, ngram-cnn
    dense: tuple[str, ...] = ()  # projections after that fresh head, OUT[:ACTIVATION] each (e.g. "256:tanh")
    max_seq_length: int | None = None
    checkpoint_steps: int = 0
    keep_checkpoints: int = 2
    skip_bad: bool = False
    precision: str = "auto"  # auto: bf16/fp16 autocast on CUDA, fp32 on CPU
    device: str | None = None  # default: cuda when present (cuda:LOCAL_RANK under torchrun), else cpu
    log_steps: int = 10
    lora: str | dict[str, Any] | None = None  # "r=16,alpha=32,..." or a TOML table: train a LoRA adapter only
    gradient_checkpointing: bool = False  # recompute activations in backward: less memory for long inputs
    compile: str = ""  # "inductor" (or "aot_eager"): the step's forward and loss through torch.compile; "" eager
    gather_across_ranks: bool = True  # under torchrun, batch-level losses see every rank's rows (losses/gather.py)
    load_best: bool = True  # with dev sets: the model ends as its best-scoring state (False: as its last step left it)

    def validate(self) -> None:
        """Check every stage and the run-level settings."""
        if not self.stages:
            raise SbertError("the config has no [[stage]]")
        if self.lora is not None:
            from sbert.adapters import parse_lora

            parse_lora(self.lora)
        for stage in self.stages:
            stage.validate()
        if self.pooling is not None and self.pooling not in POOLERS:
            raise SbertError(f"pooling={self.pooling!r}: use one of {', '.join(POOLERS)}")
        if self.dense and self.pooling is None:
            raise SbertError("dense heads start on a fresh head: give pooling too (--pooling with --dense)")
        for spec in self.dense:
            try:
                parse_dense(spec)
            except ValueError as e:
                raise SbertError(str(e)) from None
        if self.precision not in {"auto", "fp32", "bf16", "fp16"}:
            raise SbertError(f"precision={self.precision!r}: use auto, fp32, bf16 or fp16")
        if self.checkpoint_steps < 0 or self.keep_checkpoints < 1:
            raise SbertError("checkpoint_steps must be >= 0 and keep_checkpoints >= 1")
        if self.log_steps < 1:
            raise SbertError(f"log_steps={self.log_steps}: log every N >= 1 steps")


def dev_specs(dev: str | tuple[str, ...] | None) -> tuple[str, ...]:
    """A stage's dev setting as a tuple of specs (one string is one spec)."""
    if dev is None:
        return ()
    return (dev,) if isinstance(dev, str) else tuple(dev)


def check_select(select: str, dev: str | tuple[str, ...] | None) -> None:
    """Refuse a `select` that names no dev set, before training starts."""
    if not select:
        return
    specs = dev_specs(dev)
    if not specs:
        raise SbertError(f"select={select!r} needs dev sets (--dev)")
    spec, sep, metric = select.rpartition(":")
    if not sep or not metric or spec not in specs:
        raise SbertError(f"select={select!r}: expected DEV-SPEC:METRIC with DEV-SPEC one of {', '.join(specs)}")


_STAGE_KEYS = {f.name for f in fields(Stage)} - {"objectives"}
_RUN_KEYS = {f.name for f in fields(TrainConfig)} - {"stages"}


def _objectives(table: dict[str, Any], where: str) -> tuple[Objective, ...]:
    rows = table.pop("objectives", None)
    if rows is None:
        name, train = table.pop("objective", None), table.pop("train", None)
        if not name or not train:
            raise SbertError(f"{where}: needs objective and train (or an objectives list)")
        rows = [{"name": name, "train": train, "options": table.pop("options", {})}]
    try:
        return tuple(Objective(str(r["name"]), str(r["train"]), dict(r.get("options", {}))) for r in rows)
    except (KeyError, TypeError):
        raise SbertError(f"{where}: each objective needs name and train") from None


def stage_from_table(table: dict[str, Any], where: str) -> Stage:
    """A Stage from a TOML table, naming unknown keys."""
    table = dict(table)
    objectives = _objectives(table, where)
    unknown = set(table) - _STAGE_KEYS
    if unknown:
        raise SbertError(f"{where}: unknown keys {sorted(unknown)}; known: {sorted(_STAGE_KEYS)}")
    if isinstance(table.get("dev"), list):
        table["dev"] = tuple(str(d) for d in table["dev"])
    return Stage(objectives=objectives, **table)


def load_config(path: Path, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Read a TOML recipe: run-level keys at the top, one [[stage]] table per stage.

    Paths inside the file (data specs, output) are taken relative to the config file's folder;
    flags passed as `overrides` keep their own meaning.
    """
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SbertError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise SbertError(f"{path}: {e}") from None
    tables = raw.pop("stage", [])
    if isinstance(tables, dict):
        tables = [tables]
    stages = tuple(
        _relative_stage(stage_from_table(t, f"{path} stage {i + 1}"), path.parent) for i, t in enumerate(tables)
    )
    unknown = set(raw) - _RUN_KEYS
    if unknown:
        raise SbertError(f"{path}: unknown keys {sorted(unknown)}; known: {sorted(_RUN_KEYS)} and [[stage]]")
    if isinstance(raw.get("output"), str):
        raw["output"] = str(path.parent / Path(raw["output"]).expanduser())
    settings = {**raw, **{k: v for k, v in (overrides or {}).items() if v is not None}}
    if "model" not in settings or "output" not in settings:
        raise SbertError(f"{path}: needs model and output (or --model / --output)")
    config = TrainConfig(stages=stages, **settings)
    config.validate()
    return config


def _relative_stage(stage: Stage, base: Path) -> Stage:
    objectives = tuple(replace(o, train=relative_spec(o.train, base)) for o in stage.objectives)
    devs = tuple(relative_spec(d, base) for d in dev_specs(stage.dev))
    return replace(stage, objectives=objectives, dev=devs[0] if len(devs) == 1 else devs or None)


def relative_spec(spec: str, base: Path) -> str:
    """`fmt:rel/path` -> `fmt:base/rel/path`; `fmt:$SBERT_DATA/...` -> the data home's path; absolute paths kept."""
    from sbert.data.home import expand_data_home

    fmt, sep, path = spec.partition(":")
    if not sep:
        return spec
    path = expand_data_home(path)
    if Path(path).expanduser().is_absolute():
        return f"{fmt}:{path}"
    return f"{fmt}:{base / path}"
