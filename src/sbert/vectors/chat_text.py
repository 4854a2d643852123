"""Text through the tokenizer's chat template: what sentence-transformers 6.3 does with a `message` modality.

When a saved Transformer's `modality_config` has a `message` entry (6.3 writes one for any model whose
tokenizer has a chat template), 6.3 turns every text into a one-message chat (role "user"), puts a prompt
in front as a "system" message, renders it with the template and tokenizes the result without adding
special tokens (the template writes its own). A row cut at the length limit gets the template's closing
tokens written back over its last tokens, so last-token pooling still reads the template's end. The
closing tokens are the longest common tail of two renders with different contents (no count per model).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Chat templates that index a message's content as a list of typed parts want the structured form.
_STRUCTURED_PATTERNS = ("content[0]", ".type", "'type'", '"type"', "item.type", "message.content[")


class SystemPrompted(str):
    """A text that carries the prompt to put before it as a system message (PromptPlan's answer for chat models)."""

    system: str

    def __new__(cls, text: str, system: str) -> SystemPrompted:
        """The text itself, with `system` beside it."""
        made = super().__new__(cls, text)
        made.system = system
        return made


def message_format(entry: dict[str, Any], template: Any) -> str:
    """The message format, "flat" (a string) or "structured" (typed parts): as saved, or as 6.3 infers it."""
    saved = entry.get("format", "auto")
    if saved in ("flat", "structured"):
        return str(saved)
    if not isinstance(template, str) or not template:
        return "structured"
    return "structured" if any(p in template for p in _STRUCTURED_PATTERNS) else "flat"


def common_tail(first: Sequence[int], second: Sequence[int]) -> list[int]:
    """The ids two renders of a template both end with (its tail after the content); [] when they never differ."""
    count = 0
    for a, b in zip(reversed(first), reversed(second), strict=False):
        if a != b:
            break
        count += 1
    return list(first[len(first) - count :]) if 0 < count < min(len(first), len(second)) else []


class ChatText:
    """Token ids of texts rendered through a tokenizer's chat template."""

    def __init__(self, tokenizer: Any, form: str) -> None:
        self.tokenizer, self.form = tokenizer, form
        self._tails: dict[str, list[int]] = {}

    def _content(self, text: str) -> Any:
        return text if self.form == "flat" else [{"type": "text", "text": text}]

    def render(self, text: str, system: str | None = None) -> str:
        """The chat template's text for one user message (after a system message when `system` is given)."""
        messages = [{"role": "system", "content": self._content(system)}] if system else []
        messages.append({"role": "user", "content": self._content(text)})
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False))

    def tail(self, system: str | None) -> list[int]:
        """The template's closing token ids after the user's content (empty when they cannot be told)."""
        key = system or ""
        if key not in self._tails:
            first, second = (self._encode([self.render(filler, system)])[0] for filler in ("0", "1 2 3 4"))
            self._tails[key] = common_tail(first, second)
        return self._tails[key]

    def _encode(self, rendered: list[str]) -> list[list[int]]:
        encoded = self.tokenizer(rendered, add_special_tokens=False, return_attention_mask=False,
                                 return_token_type_ids=False)  # fmt: skip
        return [list(row) for row in encoded["input_ids"]]

    def token_ids(self, texts: Sequence[str], limit: int) -> tuple[list[list[int]], list[int]]:
        """Each text's ids, cut to `limit` with the template's tail written back, and the indices that were cut."""
        systems = [getattr(t, "system", None) for t in texts]
        rows = self._encode([self.render(str(t), s) for t, s in zip(texts, systems, strict=True)])
        cut = [i for i, row in enumerate(rows) if len(row) > limit]
        for i in cut:
            left = getattr(self.tokenizer, "truncation_side", "right") == "left"
            row = rows[i][-limit:] if left else rows[i][:limit]
            tail = self.tail(systems[i])[-limit:]
            if tail:
                row[len(row) - len(tail) :] = tail
            rows[i] = row
        return rows, cut
