"""What the sentence-transformers names share: constructor prompts, and encode_query / encode_document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sbert.errors import SbertError
from sbert.formats.model_config import EncoderSettings


def apply_prompts(settings: EncoderSettings, prompts: dict[str, str] | None, default: str | None) -> None:
    """The constructor's `prompts` over the saved ones, and its `default_prompt_name` (one of them)."""
    if prompts:
        settings.prompts = {**settings.prompts, **prompts}
    if default is not None:
        if default not in settings.prompts:
            raise SbertError(f"default_prompt_name {default!r} is not among the prompts {list(settings.prompts)}")
        settings.default_prompt_name = default


def with_task(options: dict[str, Any], task: str) -> dict[str, Any]:
    """Encode's options with the query / document task, unless the call names a prompt itself."""
    named = options.get("prompt") is not None or options.get("prompt_name") is not None
    return options if named else {**options, "task": task}


class TaskEncodes:
    """encode_query / encode_document as sentence-transformers 6.2 defines them, over the class's own `encode`.

    A mixin placed first, so these two come before the native class's; `encode` is the subclass's (with a task).
    """

    def encode_query(self: Any, inputs: str | Sequence[str] | None = None, **options: Any) -> Any:
        """`encode` with the model's "query" prompt (none when it has none), unless a prompt is given."""
        return self.encode(inputs, **with_task(options, "query"))

    def encode_document(self: Any, inputs: str | Sequence[str] | None = None, **options: Any) -> Any:
        """`encode` with the model's "document" prompt (none when it has none), unless a prompt is given."""
        return self.encode(inputs, **with_task(options, "document"))
