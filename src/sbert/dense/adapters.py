"""LoRA adapters on a SentenceEncoder: load one, switch between them, merge the active one.

A mixin of SentenceEncoder; each operation tells the weights state (weights_state.TracksWeights)
that the vectors changed, so every cached engine and digest is rebuilt.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Protocol, cast

from torch import nn

from sbert import adapters
from sbert.formats.model_dirs import resolve_model_dir
from sbert.modules import Transformer, adapter_ops


class AdapterHost(Protocol):
    """What the mixin asks of the SentenceEncoder it is mixed into."""

    @property
    def transformer(self) -> Transformer: ...  # noqa: D102
    def modules(self) -> Iterator[nn.Module]: ...  # noqa: D102
    def mark_weights_changed(self) -> None: ...  # noqa: D102


class AdapterMethods:
    """`load_adapter`, `set_adapter` and `merge_adapter` (peft's own API underneath: modules/adapter_ops.py)."""

    def load_adapter(self, path: str | os.PathLike[str], name: str = "default") -> None:
        """Add the LoRA adapter in `path` (PEFT or sentence-transformers layout) under `name` and make it active."""
        model = cast(AdapterHost, self)
        adapter_ops.add_adapter(model.transformer, resolve_model_dir(path), name)
        model.mark_weights_changed()

    def set_adapter(self, name: str) -> None:
        """Run the adapter loaded under `name` (the vectors change; saving writes this one)."""
        model = cast(AdapterHost, self)
        adapter_ops.switch_adapter(model.transformer, name)
        model.mark_weights_changed()

    def merge_adapter(self) -> None:
        """Fold the active adapter into the weights in place (a plain model from then on; others are dropped)."""
        model = cast(AdapterHost, self)
        found = [m for m in model.modules() if isinstance(m, Transformer) and m.has_adapter]  # every Router route's
        for transformer in found:
            transformer.auto_model = adapters.merged(transformer.auto_model, in_place=True)
        if found:
            model.mark_weights_changed()
