"""What the sentence-transformers names share: constructor prompts, and encode_query / encode_document."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import torch

from sbert.compat.model_card import ModelCardData, SentenceTransformerModelCardData, write_card
from sbert.compat.model_parts import ModelParts
from sbert.errors import SbertError
from sbert.formats.model_config import EncoderSettings
from sbert.renamed_kwargs import renamed_kwargs


def apply_prompts(settings: EncoderSettings, prompts: dict[str, str] | None, default: str | None) -> None:
    """The constructor's `prompts` over the saved ones, and its `default_prompt_name` (one of them)."""
    if prompts:
        settings.prompts = {**settings.prompts, **prompts}
    if default is not None:
        if default not in settings.prompts:
            raise SbertError(f"default_prompt_name {default!r} is not among the prompts {list(settings.prompts)}")
        settings.default_prompt_name = default


# 6.2's constructor backends; sbert runs each (its graph runtimes check their vectors against torch's).
BACKENDS = ("torch", "onnx", "openvino")

# The prompt names encode_query / encode_document look for, in order (sentence-transformers 6.2).
TASK_PROMPTS = {"query": ("query",), "document": ("document", "passage", "corpus")}


def with_task(options: dict[str, Any], task: str, prompts: dict[str, str]) -> dict[str, Any]:
    """Encode's options for encode_query / encode_document: route by `task`, prompt by the task's prompt name.

    As 6.2: a prompt or prompt_name the call gives wins; else the first of the task's names the model has.
    """
    options = {**options, "task": task}
    if options.get("prompt") is None and options.get("prompt_name") is None:
        options["prompt_name"] = next((n for n in TASK_PROMPTS[task] if n in prompts), None)
    return options


def routed_prompt(
    settings: EncoderSettings, task: str | None, prompt_name: str | None, prompt: str | None
) -> str | None:
    """The prompt for an `encode(..., task=...)` call: in 6.2 a task only routes, so its prompt is not added.

    With a task and no prompt named, the model's default prompt (or none) is given explicitly, which keeps
    sbert's encode from adding the task's prompt; otherwise `prompt` unchanged.
    """
    if task is None or prompt is not None or prompt_name is not None:
        return prompt
    return settings.resolve_prompt()


class TaskEncodes:
    """encode_query / encode_document as sentence-transformers 6.2 defines them, over the class's own `encode`.

    A mixin placed first, so these two come before the native class's; `encode` is the subclass's (with a task).
    """

    @renamed_kwargs(sentences="inputs")
    def encode_query(self: Any, inputs: str | Sequence[str] | None = None, **options: Any) -> Any:
        """`encode` with the model's "query" prompt (none when it has none), unless a prompt is given."""
        return self.encode(inputs, **with_task(options, "query", self.settings.prompts))

    @renamed_kwargs(sentences="inputs")
    def encode_document(self: Any, inputs: str | Sequence[str] | None = None, **options: Any) -> Any:
        """`encode` with the model's "document" prompt (none when it has none), unless a prompt is given."""
        return self.encode(inputs, **with_task(options, "document", self.settings.prompts))


class ModelFacts(ModelParts):
    """What 6.2's model classes tell about themselves, shared by the drop-in classes (a mixin placed first).

    `model_type` is the class name sentence-transformers saves; a text model embeds text only. The parts
    (Hugging Face model, config, tokenization) come from compat/model_parts.py.
    """

    model_type: str = ""
    model_card_data_class: type[ModelCardData] = SentenceTransformerModelCardData

    @property
    def model_card_data(self) -> ModelCardData:
        """The card data `save` writes into README.md (the constructor's `model_card_data`, else empty)."""
        data = self.__dict__.get("_card_data")
        if data is None:
            data = self.__dict__["_card_data"] = self.model_card_data_class()
        return cast(ModelCardData, data)

    @model_card_data.setter
    def model_card_data(self, data: ModelCardData | None) -> None:
        if data is not None and not isinstance(data, ModelCardData):
            raise SbertError(f"model_card_data: expected a {self.model_card_data_class.__name__}, "
                             f"got {type(data).__name__}")  # fmt: skip
        self.__dict__["_card_data"] = data

    @property
    def modalities(self: Any) -> list[str]:
        """The input types the model takes: text, and image for a two-tower image-text model."""
        first = getattr(self, "input_module", None)
        return list(getattr(first, "modalities", ("text",)))

    def supports(self, modality: str) -> bool:
        """Whether the model takes inputs of `modality`."""
        return modality in self.modalities

    @property
    def dtype(self: Any) -> Any:
        """The dtype of the model's weights."""
        return next(self.parameters()).dtype

    def get_backend(self) -> str:
        """The runtime `encode` / `predict` use unless told otherwise: the constructor's `backend` (torch)."""
        return str(self.__dict__.get("_backend", "torch"))

    def set_backend(self, backend: str) -> None:
        """6.2's `backend=`: torch, or onnx / openvino, sbert's graph runtimes (exported beside the model, once)."""
        if backend not in BACKENDS:
            raise SbertError(f"backend={backend!r}: use one of {', '.join(BACKENDS)}")
        self.__dict__["_backend"] = backend

    def get_max_seq_length(self: Any) -> int:
        """The token limit of each input."""
        return int(self.max_seq_length)

    def save(
        self: Any, path: str | os.PathLike[str], model_name: str | None = None, create_model_card: bool = True,
        train_datasets: list[str] | None = None, safe_serialization: bool = True, **options: Any,
    ) -> None:  # fmt: skip
        """Write the sentence-transformers layout atomically, with README.md from `model_card_data` unless told not to.

        `model_name` titles the card and `train_datasets` adds dataset ids to its header, as in 6.2. Files an
        `extras` callback adds (a training run's card) land in the same atomic write, under the header.
        """
        extras = options.pop("extras", None)

        def add_files(folder: Path) -> None:
            if extras is not None:
                extras(folder)
            if create_model_card:
                write_card(folder, self, self.model_card_data, model_name, train_datasets)

        super().save(path, extras=add_files, **options)  # type: ignore[misc]

    def save_pretrained(
        self: Any, path: str | os.PathLike[str], model_name: str | None = None, create_model_card: bool = True,
        train_datasets: list[str] | None = None, safe_serialization: bool = True, **options: Any,
    ) -> None:  # fmt: skip
        """`save`, under the Hugging Face name."""
        self.save(path, model_name, create_model_card, train_datasets, safe_serialization, **options)

    @classmethod
    def merge(
        cls, models: Sequence[Any], method: str = "linear", *, base_model: Any = None,
        parameters: dict[str, Any] | None = None, dtype: Any = torch.float32, out_dtype: Any = None,
        device: Any = "cpu", batch_options: Any = None, **load_kwargs: Any,
    ) -> Any:  # fmt: skip
        """One model from fine-tunes of a common ancestor: `linear`, `task_arithmetic` or `slerp` (compat/merge.py).

        Models are instances or folders (loaded with `load_kwargs`); `parameters` holds the method's
        `weight` (one per model, or one for all), `normalize` or `t`. A new model of this class comes back.
        """
        from sbert.compat.merge import merge_models

        if batch_options is not None:
            warnings.warn("merge: batch_options tunes mergekit's tensor packing; sbert merges tensor by tensor and "
                          "does not use it", UserWarning, stacklevel=2)  # fmt: skip
        return merge_models(cls, models, method, base_model, parameters or {}, dtype, out_dtype, device, load_kwargs)

    def evaluate(self: Any, evaluator: Any, output_path: str | None = None) -> Any:
        """`evaluator(self)`: its metrics (its files written under `output_path`)."""
        if output_path is not None:
            Path(output_path).mkdir(parents=True, exist_ok=True)
        return evaluator(self, output_path)
