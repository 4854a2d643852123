"""sentence-transformers 6.2's PEFT calls on the drop-in classes: each hands over to transformers' adapter API.

`model.add_adapter(LoraConfig(...))`, `enable_adapters` / `disable_adapters`, `active_adapters`,
`get_adapter_state_dict`, `delete_adapter` are transformers' `PeftAdapterMixin` methods of the Hugging Face
model inside the first Transformer module, as in 6.2. `load_adapter` / `set_adapter` stay sbert's own
(SentenceEncoder's, through peft: sbert.adapters), as do `sbert train --lora` and adapter folders.
"""

from __future__ import annotations

from typing import Any


def _changed(model: Any) -> None:
    """The engine's cached copies of the weights (a cast copy on a GPU) are stale once an adapter changes."""
    mark = getattr(model, "mark_weights_changed", None)
    if mark is not None:
        mark()


def _backbone(model: Any, method: str) -> Any:
    """The bound `method` of the model's Hugging Face model, or 6.2's ValueError for a model without one."""
    if not model.has_peft_compatible_model():
        raise ValueError("PEFT methods are only supported for Sentence Transformer models that use the Transformer "
                         "module.")  # fmt: skip
    return getattr(model.transformers_model, method)


class PeftMethods:
    """The adapter methods of 6.2's model classes (a mixin of the drop-in classes, through ModelFacts)."""

    def has_peft_compatible_model(self: Any) -> bool:
        """Whether the model's Hugging Face model takes transformers' adapter methods."""
        from transformers.integrations.peft import PeftAdapterMixin

        return isinstance(self.transformers_model, PeftAdapterMixin)

    def check_peft_compatible_model(self: Any) -> None:
        """6.2's ValueError when it does not."""
        _backbone(self, "add_adapter")

    def add_adapter(self, *args: Any, **kwargs: Any) -> None:
        """A fresh adapter (a peft config, e.g. LoraConfig) on the Hugging Face model, for training."""
        _backbone(self, "add_adapter")(*args, **kwargs)
        _changed(self)

    def delete_adapter(self, *args: Any, **kwargs: Any) -> None:
        """Remove an adapter by name."""
        _backbone(self, "delete_adapter")(*args, **kwargs)
        _changed(self)

    def disable_adapters(self) -> None:
        """Embed with the base model only."""
        _backbone(self, "disable_adapters")()
        _changed(self)

    def enable_adapters(self) -> None:
        """Embed with the active adapters again."""
        _backbone(self, "enable_adapters")()
        _changed(self)

    def active_adapters(self) -> list[str]:
        """The names of the active adapters."""
        return list(_backbone(self, "active_adapters")())

    def active_adapter(self) -> str:
        """The name of the active adapter (transformers' older single-adapter call)."""
        return str(_backbone(self, "active_adapters")()[0])

    def get_adapter_state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The adapter's weights only (the active adapter unless one is named)."""
        return dict(_backbone(self, "get_adapter_state_dict")(*args, **kwargs))
