"""LoRA adapters in PEFT's layout: reading, writing and merging them, and the LoRA settings (`spec`).

Adding one to a chain lives in `sbert.modules.adapter_ops`, training one in `sbert.training.lora`.
"""

from __future__ import annotations

from sbert.adapters.peft_io import (
    ADAPTER_CONFIG_FILE,
    ADAPTER_WEIGHTS_FILE,
    DEFAULT_ADAPTER,
    active_adapter,
    backbone,
    has_adapter,
    is_adapter_dir,
    merged,
    parameter_counts,
)
from sbert.adapters.spec import LoraSpec, choose_targets, linear_names, parse_lora

__all__ = [
    "ADAPTER_CONFIG_FILE",
    "ADAPTER_WEIGHTS_FILE",
    "DEFAULT_ADAPTER",
    "LoraSpec",
    "active_adapter",
    "backbone",
    "choose_targets",
    "has_adapter",
    "is_adapter_dir",
    "linear_names",
    "merged",
    "parameter_counts",
    "parse_lora",
]
