"""The prompt policy: which text goes in front of an input, and which of its tokens pool.

One place decides it for every caller (encode, encode_query / encode_document, the server,
training, the index and search, chunking of long inputs):

- the text: an explicit `prompt`, else the named prompt, else the prompt of the task ("query" or
  "document") when the model has one, else the model's default prompt, else none;
- the pooled tokens: all of them, unless a Pooling module has `include_prompt=false`; then the
  first `skip` positions ([CLS] and the prompt, without its closing special token) stay out of
  the pooled vector, as in sentence-transformers. They still pass through the encoder, so every
  other token attends to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sbert.formats.model_config import EncoderSettings
from sbert.vectors.chat_text import SystemPrompted

# Duck-typed (a Pooling has `include_prompt`, a Transformer `token_ids`): the static encoder shares
# this policy and imports no torch.


@dataclass(frozen=True)
class PromptPlan:
    """What a call puts in front of each input and how many leading tokens pooling leaves out."""

    text: str = ""  # prepended to every input
    skip: int = 0  # leading token positions (specials included) left out of pooling; 0: all pool

    system: bool = False  # a chat-template model: the prompt goes before each input as a system message

    def apply(self, texts: Sequence[str]) -> list[str]:
        """The inputs with the prompt text in front (or beside them, as a system message, for a chat model)."""
        if self.text and self.system:
            return [SystemPrompted(t, self.text) for t in texts]
        return [self.text + t for t in texts] if self.text else list(texts)


def excludes_prompt(modules: Sequence[Any]) -> bool:
    """Whether a Pooling module of the chain leaves prompt tokens out."""
    return any(getattr(m, "include_prompt", True) is False for m in modules)


def prompt_tokens(transformer: Any, prompt: str) -> int:
    """Tokens a prompt occupies at the start of an input: its ids with specials, less a closing special."""
    ids = transformer.token_ids([prompt])[0][0]
    special = set(getattr(transformer.tokenizer, "all_special_ids", []))
    return len(ids) - 1 if ids and ids[-1] in special else len(ids)


def plan_prompt(
    settings: EncoderSettings,
    modules: Sequence[Any],
    *,
    task: str | None = None,
    prompt_name: str | None = None,
    prompt: str | None = None,
) -> PromptPlan:
    """The prompt plan of one call: its text (see the module docstring) and the tokens pooling skips."""
    text = settings.resolve_prompt(task=task, prompt_name=prompt_name, prompt=prompt)
    return plan_for_text(text, modules)


def plan_for_text(text: str, modules: Sequence[Any]) -> PromptPlan:
    """The plan for a known prompt text on this chain (skip > 0 only when pooling leaves the prompt out).

    `modules[0]` tokenizes the prompt (a Transformer); a chain without one (static) pools every token.
    """
    if text and modules and getattr(modules[0], "renders_chat", False):
        return PromptPlan(text, 0, system=True)  # 6.3 pools a chat model's prompt tokens with the rest
    if not text or not modules or not excludes_prompt(modules) or not hasattr(modules[0], "token_ids"):
        return PromptPlan(text, 0)
    return PromptPlan(text, prompt_tokens(modules[0], text))
