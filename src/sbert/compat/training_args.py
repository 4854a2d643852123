"""`SentenceTransformerTrainingArguments`: transformers' TrainingArguments fields with sentence-transformers' additions.

The fields are transformers' own (names, types, defaults, help) read from its dataclass, so a script's
arguments are accepted exactly as there; construction does not set up devices or need accelerate (sbert's
engine does that). `compat/trainer.py` maps what each field means onto sbert's engine and warns, once,
about any field set away from its default that the engine has no meaning for.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from enum import Enum, StrEnum
from typing import Any

from transformers import TrainingArguments as _Transformers


class BatchSamplers(StrEnum):
    """How a training set is cut into batches (sentence-transformers' names)."""

    BATCH_SAMPLER = "batch_sampler"  # random batches; a text may repeat within one
    NO_DUPLICATES = "no_duplicates"  # no text twice in a batch (in-batch negatives stay true negatives)
    NO_DUPLICATES_HASHED = "no_duplicates_hashed"
    GROUP_BY_LABEL = "group_by_label"


class MultiDatasetBatchSamplers(StrEnum):
    """The order in which several training sets take turns."""

    ROUND_ROBIN = "round_robin"
    PROPORTIONAL = "proportional"


# sentence-transformers' own fields, after transformers' (warmup_ratio is redefined: None, deprecated for warmup_steps).
_OWN: list[tuple[str, Any, Any]] = [
    ("prompts", Any, dataclasses.field(default=None, metadata={"help": "A prompt per column, or per dataset."})),
    ("batch_sampler", Any, dataclasses.field(default=BatchSamplers.BATCH_SAMPLER)),
    ("multi_dataset_batch_sampler", Any, dataclasses.field(default=MultiDatasetBatchSamplers.PROPORTIONAL)),
    ("router_mapping", Any, dataclasses.field(default_factory=dict)),
    ("learning_rate_mapping", Any, dataclasses.field(default_factory=dict)),
    ("warmup_ratio", Any, dataclasses.field(default=None)),
    # sbert's batching: batches drawn from length-sorted windows of this many batches (1: plain random batches).
    ("length_groups", int, dataclasses.field(default=50)),
]


def _copied(f: dataclasses.Field[Any]) -> dataclasses.Field[Any]:
    """A transformers field as a new field of ours: its default (or default factory) and help text."""
    if f.default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=f.default_factory, metadata=f.metadata)
    return dataclasses.field(default=f.default, metadata=f.metadata)


def _post_init(self: Any) -> None:
    """Enum values from strings, warmup_ratio folded into warmup_steps (transformers 5), eval_steps' default."""
    if self.warmup_ratio is not None and self.warmup_steps == 0:
        self.warmup_steps, self.warmup_ratio = self.warmup_ratio, None
    for name, enum in (("batch_sampler", BatchSamplers), ("multi_dataset_batch_sampler", MultiDatasetBatchSamplers)):
        value = getattr(self, name)
        if isinstance(value, str):
            setattr(self, name, enum(value))
    for name in ("eval_strategy", "save_strategy", "logging_strategy", "lr_scheduler_type", "optim"):
        value = getattr(self, name)
        setattr(self, name, value.value if isinstance(value, Enum) else str(value))
    for name in ("prompts", "learning_rate_mapping", "router_mapping"):
        value = getattr(self, name)
        if isinstance(value, str):
            try:
                setattr(self, name, json.loads(value))
            except json.JSONDecodeError:
                if name != "prompts":  # a plain string is one prompt for every column
                    raise ValueError(f"{name} must be a dict (or its JSON), got {value!r}") from None
    # What transformers' and 6.2's own __post_init__ settle the same way (switches left at None become False,
    # `debug` a list; sentence-transformers evaluates with its evaluators, so only losses in predictions).
    for name in ("gradient_checkpointing", "activation_checkpointing", "ddp_broadcast_buffers"):
        if getattr(self, name) is None:
            setattr(self, name, False)
    if self.disable_tqdm is None:  # transformers': no bars when its logging is quieter than warnings
        self.disable_tqdm = logging.getLogger("transformers.training_args").getEffectiveLevel() > logging.WARN
    if isinstance(self.debug, str):
        self.debug = self.debug.split()
    self.prediction_loss_only = True
    if self.eval_strategy == "steps" and not self.eval_steps:
        self.eval_steps = self.logging_steps
    if isinstance(self.report_to, str):
        self.report_to = [] if self.report_to == "none" else [self.report_to]


def _to_dict(self: Any) -> dict[str, Any]:
    """Every field and its value (enums as their values), as transformers' `to_dict`."""
    return {f.name: getattr(self, f.name).value if isinstance(getattr(self, f.name), Enum) else getattr(self, f.name)
            for f in dataclasses.fields(self)}  # fmt: skip


def arguments_class(name: str, extra: list[tuple[str, Any, Any]]) -> type:
    """Transformers' fields, then 6.2's own and `extra` (a model kind's additions), then sbert's length_groups.

    sbert's one field of its own comes last, so each of 6.2's fields keeps its position in the signature.
    """
    own = [*_OWN[:-1], *extra, _OWN[-1]]
    names = {field_name for field_name, _, _ in own}
    cls = dataclasses.make_dataclass(
        name,
        [(f.name, f.type, _copied(f)) for f in dataclasses.fields(_Transformers) if f.name not in names] + own,
        namespace={"__post_init__": _post_init, "to_dict": _to_dict,
                   "__doc__": "transformers' TrainingArguments and sentence-transformers' fields, for sbert's engine."},
    )  # fmt: skip
    cls.__module__ = __name__  # pickling and repr name this module
    return cls


SentenceTransformerTrainingArguments = arguments_class("SentenceTransformerTrainingArguments", [])
# 6.2's multi-vector addition: `max_length`, tokens per column (an int, or one per task). sbert's columns take the
# model's query and document lengths; a value set here is named in the engine's one warning of unused fields.
MultiVectorEncoderTrainingArguments = arguments_class(
    "MultiVectorEncoderTrainingArguments",
    [("max_length", Any, dataclasses.field(default=None, metadata={"help": "Tokens per column, or per task."}))],
)
