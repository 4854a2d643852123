"""What 6.2's three model classes expose about their parts: the Hugging Face model, its config, tokenization.

`ModelParts` is a mixin of the drop-in classes (compat/conventions.ModelFacts takes it in). Each method
answers as 6.2's does over sbert's module chain; the prompt tokens come from sbert's prompt policy
(encoding/prompted.py), so `preprocess` and `encode` agree on what a prompt occupies.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from sbert.compat.peft_methods import PeftMethods
from sbert.encoding.prompted import prompt_tokens


def _pretrained(model: nn.Module) -> Any:
    """The first Hugging Face model inside `model`, or None (a static model has none)."""
    from transformers import PreTrainedModel

    return next((m for m in model.modules() if isinstance(m, PreTrainedModel)), None)


class ModelParts(PeftMethods):
    """The Hugging Face model, config and tokenizer of a drop-in class, and 6.2's calls on them (PEFT's too)."""

    SUPPORTED_SIMILARITY_FN_NAMES = ("cosine", "dot", "euclidean", "manhattan")

    @property
    def transformers_model(self: Any) -> Any:
        """The Hugging Face model inside the first Transformer module (None without one)."""
        return _pretrained(self)

    @property
    def config(self: Any) -> Any:
        """The Hugging Face model's config (None without a Hugging Face model)."""
        return getattr(self.transformers_model, "config", None)

    @property
    def processor(self: Any) -> Any:
        """What turns inputs into model features: for a text model, its tokenizer."""
        return self.tokenizer

    def activation_checkpointing_enable(self: Any, activation_checkpointing_kwargs: dict[str, Any] | None = None,
                                        **kwargs: Any) -> None:  # fmt: skip
        """Recompute activations in the backward pass (less memory, more time) in every Hugging Face model inside.

        As 6.3: `activation_checkpointing_kwargs` go to `torch.utils.checkpoint.checkpoint`; a model that does
        not support it is skipped.
        """
        from transformers import PreTrainedModel

        for module in self.modules():
            if isinstance(module, PreTrainedModel) and module.supports_gradient_checkpointing:
                # transformers' newer name where it has it (the older one warns that it is deprecated)
                if hasattr(module, "activation_checkpointing_enable"):
                    module.activation_checkpointing_enable(
                        activation_checkpointing_kwargs=activation_checkpointing_kwargs
                    )
                else:
                    module.gradient_checkpointing_enable(gradient_checkpointing_kwargs=activation_checkpointing_kwargs)

    def gradient_checkpointing_enable(self: Any, gradient_checkpointing_kwargs: dict[str, Any] | None = None,
                                      **kwargs: Any) -> None:  # fmt: skip
        """`activation_checkpointing_enable` under its older name (6.3 keeps both)."""
        self.activation_checkpointing_enable(gradient_checkpointing_kwargs, **kwargs)

    def get_device_name(self: Any) -> str:
        """The device a model loads on and a pool starts with by default (`sbert.util.get_device_name`)."""
        from sbert.util import get_device_name

        return get_device_name()

    def get_model_kwargs(self: Any) -> list[str]:
        """The extra keywords `encode` passes to the modules: `task` for a model with a Router, else none."""
        return ["task"] if getattr(self, "router", None) is not None else []

    def clear_placement_cache(self) -> None:
        """Nothing to clear: sbert places a model on its device when it loads, with no accelerate hook."""

    def set_pooling_include_prompt(self: Any, include_prompt: bool) -> None:
        """Whether the Pooling module pools the prompt's tokens (the prompt policy reads it on every call)."""
        pooling = next((m for m in self.modules() if hasattr(m, "include_prompt")), None)
        if pooling is not None:
            pooling.include_prompt = include_prompt

    def preprocess(self: Any, inputs: Sequence[Any], prompt: str | None = None, **kwargs: Any) -> dict[str, Any]:
        """Padded features of `inputs` (texts, or text pairs for a cross-encoder), with `prompt` in front.

        As 6.2: the tokenizer's tensors, `modality` "text", and `prompt_length` when a prompt is given.
        """
        if not inputs:
            return {}
        texts = [list(x) if isinstance(x, list | tuple) else [x] for x in inputs]
        if prompt:
            texts = [[prompt + row[0], *row[1:]] for row in texts]
        columns = list(zip(*texts, strict=True))
        features = dict(self.tokenizer(*[list(c) for c in columns], padding=True, truncation="longest_first",
                                       max_length=self.max_seq_length, return_tensors="pt"))  # fmt: skip
        features = {k: v.to(self.device) for k, v in features.items()}
        features["modality"] = "text"
        if prompt:
            features["prompt_length"] = prompt_tokens(self._prompt_tokenizer(), prompt)
        return features

    def _prompt_tokenizer(self: Any) -> Any:
        """The module whose `token_ids` measure a prompt (the first Transformer)."""
        return next(m for m in self.modules() if hasattr(m, "token_ids"))

    def smart_batching_collate(self: Any, batch: list[Any]) -> tuple[list[dict[str, Any]], torch.Tensor]:
        """A DataLoader collate of `InputExample`s: each text column's features, and the labels as a tensor."""
        columns = list(zip(*[example.texts for example in batch], strict=True))
        labels = torch.tensor([example.label for example in batch])
        return [self.preprocess(list(column)) for column in columns], labels

    def start_multi_process_pool(self, target_devices: list[str] | None = None) -> dict[str, Any]:
        """A pool for `encode(pool=...)`: the devices to spread a call over (4 CPUs by default)."""
        return {"devices": list(target_devices or (["cuda"] * torch.cuda.device_count() or ["cpu"] * 4))}

    @staticmethod
    def stop_multi_process_pool(pool: dict[str, Any]) -> None:
        """Nothing to stop: sbert starts the workers per call and ends them with it."""


def warn_pool_unused(pool: dict[str, Any] | None, call: str) -> None:
    """One warning where a pool is given to a call that runs in this process (the same scores, its own threads)."""
    if pool is not None:
        warnings.warn(f"{call}: sbert runs this call in one process on its own threads; the pool is not used",
                      UserWarning, stacklevel=3)  # fmt: skip
