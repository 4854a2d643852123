"""LoRA adapters: training them, saving and loading them in PEFT's layout, merging them into the weights."""

from __future__ import annotations

from sbert.adapters.ops import add_adapter, merged_chain, switch_adapter
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
    "add_adapter",
    "backbone",
    "choose_targets",
    "has_adapter",
    "is_adapter_dir",
    "linear_names",
    "merged",
    "merged_chain",
    "parameter_counts",
    "parse_lora",
    "switch_adapter",
]
