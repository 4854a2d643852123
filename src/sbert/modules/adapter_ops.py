"""Adapter operations on a model's Transformer module: add one from a folder, switch, merge a copy for export."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sbert.adapters.peft_io import has_adapter, is_adapter_dir, load_adapter, merged
from sbert.errors import ModelFormatError, SbertError

if TYPE_CHECKING:
    from sbert.modules import Module, Transformer


def add_adapter(transformer: Transformer, folder: Path, name: str) -> None:
    """Load the adapter in `folder` (or its Transformer subfolder) onto `transformer` under `name`."""
    from sbert.adapters.base_model import transformer_folder

    source = folder if is_adapter_dir(folder) else transformer_folder(folder)
    if not is_adapter_dir(source):
        raise ModelFormatError(f"{folder}: holds no LoRA adapter (adapter_config.json)")
    transformer.auto_model = load_adapter(transformer.auto_model, source, name)


def switch_adapter(transformer: Transformer, name: str) -> None:
    """Make the adapter loaded under `name` the active one."""
    if not has_adapter(transformer.auto_model):
        raise SbertError("the model has no adapter to switch to (load_adapter first)")
    known = list(transformer.auto_model.peft_config)
    if name not in known:
        raise SbertError(f"no adapter named {name!r}; loaded: {', '.join(known)}")
    transformer.auto_model.set_adapter(name)


def merged_chain(modules: Sequence[Module]) -> list[Module]:
    """The chain with a merged copy of an adapter Transformer at its head (the model itself is left as it is)."""
    from sbert.modules import Transformer

    first = modules[0] if modules else None
    if not isinstance(first, Transformer) or not first.has_adapter:
        return list(modules)
    copy = Transformer(merged(first.auto_model), first.tokenizer, first.max_seq_length, first.do_lower_case)
    copy.train(first.training)  # a new module starts in training mode (dropout on)
    return [copy, *modules[1:]]
