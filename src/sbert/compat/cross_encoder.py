"""`CrossEncoder`: sentence-transformers' constructor, `predict` and `rank` on sbert's cross-encoder.

A thin subclass of `sbert.reranker.CrossEncoder` (one engine): `CrossEncoder(path, max_length=...)`
loads a saved cross-encoder, or puts a fresh head on a plain encoder, as sentence-transformers 6.2 does;
`predict` takes 6.2's arguments (`activation_fn` a callable on torch scores, `apply_softmax`,
`convert_to_numpy`, `convert_to_tensor`, prompts) and returns its types: a float32 numpy array, a torch
tensor, a list of tensors, or one score for a single pair. sbert's own arguments (`backend`,
`precision` the compute dtype, `batch_tokens`, `activation=False`) stay extra keywords, and
`CrossEncoder.load` / `.new` still build one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from sbert.compat.constructor_options import check_options
from sbert.compat.conventions import ModelFacts, apply_prompts
from sbert.compat.model_card import CrossEncoderModelCardData
from sbert.compat.model_parts import warn_pool_unused
from sbert.formats import layout
from sbert.formats.model_dirs import resolve_model_dir
from sbert.modules.classifier import PairClassifier
from sbert.modules.logit_score import LogitPairScorer, is_causal_lm
from sbert.renamed_kwargs import renamed_kwargs
from sbert.reranker.model import CrossEncoder as NativeCrossEncoder
from sbert.reranker.vision_scorer import is_vision_reranker
from sbert.similarity import rank_order

# The activations sbert records by dotted name, as the torch modules sentence-transformers hands out.
TORCH_ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "torch.nn.modules.activation.Sigmoid": nn.Sigmoid,
    "torch.nn.modules.linear.Identity": nn.Identity,
    "torch.nn.modules.activation.Tanh": nn.Tanh,
}


class CrossEncoder(ModelFacts, NativeCrossEncoder):
    """`CrossEncoder("path/to/reranker")` loads; `predict` and `rank` answer as sentence-transformers' do."""

    native_class = NativeCrossEncoder  # what the server and the evaluators use (sbert/native.py)
    model_type = "CrossEncoder"
    model_card_data_class = CrossEncoderModelCardData

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str] | PairClassifier | LogitPairScorer | None = None,
        activation: str | None = None,  # sbert's own (load / new): the activation's dotted name
        device: Any = None,
        *,
        num_labels: int | None = None,
        max_length: int | None = None,
        activation_fn: Callable[..., Any] | None = None,
        prompts: dict[str, str] | None = None,
        default_prompt_name: str | None = None,
        model_kwargs: dict[str, Any] | None = None,
        model_card_data: CrossEncoderModelCardData | None = None,
        backend: str = "torch",
        **unused: Any,  # the reference's other keywords: compat/constructor_options.py
    ) -> None:
        check_options("CrossEncoder", unused, model_kwargs)
        self.model_card_data = model_card_data
        self.set_backend(backend)
        if isinstance(model_name_or_path, PairClassifier | LogitPairScorer):  # sbert's own constructors (load, new)
            super().__init__(model_name_or_path, activation, device)
        else:
            if model_name_or_path is None:
                raise TypeError("CrossEncoder needs a model name or folder")
            loaded = _load_or_new(model_name_or_path, num_labels, device, model_kwargs)
            super().__init__(loaded.classifier, loaded.activation, loaded.device)
            self.settings, self.source_dir = loaded.settings, loaded.source_dir
        self._activation_override: Callable[..., Any] | None = activation_fn
        if max_length is not None:
            self.classifier.max_seq_length = max_length
        apply_prompts(self.settings, prompts, default_prompt_name)

    def fit(self, train_dataloader: Any, evaluator: Any = None, epochs: int = 1, loss_fct: Any = None,
            activation_fct: Callable[..., Any] = nn.Identity(), **options: Any) -> None:  # noqa: B008  # fmt: skip
        """sentence-transformers' legacy cross-encoder training: a DataLoader of InputExample(texts=[a, b], label).

        Takes fit's other keywords (scheduler, warmup_steps, optimizer_params, weight_decay, evaluation_steps,
        output_path, save_best_model, max_grad_norm, use_amp, callback, show_progress_bar: compat/fit.py) and
        runs CrossEncoderTrainer on sbert's engine.
        """
        from sbert.compat.fit import FitOptions, fit_cross_encoder

        fit_cross_encoder(self, train_dataloader, loss_fct, activation_fct,
                          FitOptions(evaluator=evaluator, epochs=epochs, **options))  # fmt: skip

    def old_fit(self, train_dataloader: Any, evaluator: Any = None, epochs: int = 1, loss_fct: Any = None,
                activation_fct: Callable[..., Any] = nn.Identity(), **options: Any) -> None:  # noqa: B008  # fmt: skip
        """The pre-4.0 name of `fit` (one training path here: the engine)."""
        self.fit(train_dataloader, evaluator, epochs, loss_fct, activation_fct, **options)

    @property
    def activation_fn(self) -> Callable[..., Any]:
        """The callable applied to the scores (a torch module: Sigmoid for one label, Identity otherwise)."""
        return self._activation_override or TORCH_ACTIVATIONS[self.activation]()

    @activation_fn.setter
    def activation_fn(self, value: Callable[..., Any] | None) -> None:
        self._activation_override = value

    @property
    def default_activation_function(self) -> Callable[..., Any]:
        """6.2's deprecated name for `activation_fn`."""
        return self.activation_fn

    def get_default_activation_fn(self) -> Callable[..., Any]:
        """The activation the model's folder names (Sigmoid for one label, Identity otherwise, unless saved)."""
        return TORCH_ACTIVATIONS[self.activation]()

    def is_singular_input(self, inputs: Any) -> bool:
        """Whether `inputs` is one pair rather than a list of pairs."""
        return _is_single_pair(inputs)

    def tokenize(self, texts: Sequence[Any], **kwargs: Any) -> dict[str, Any]:
        """6.2's older name for `preprocess`."""
        return self.preprocess(texts, **kwargs)

    def smart_batching_collate(self, batch: list[Any]) -> tuple[dict[str, Any], torch.Tensor]:  # type: ignore[override]
        """6.2's legacy collate of `InputExample` pairs: the pairs' features, labels float for one label else long."""
        dtype = torch.float if self.num_labels == 1 else torch.long
        labels = torch.tensor([example.label for example in batch], dtype=dtype, device=self.device)
        return self._pair_features([example.texts for example in batch]), labels

    def smart_batching_collate_text_only(self, batch: list[Any]) -> dict[str, Any]:
        """6.2's legacy collate of bare pairs (prediction): their features."""
        return self._pair_features(batch)

    def _pair_features(self, rows: list[Any]) -> dict[str, Any]:
        # 6.2's collates strip each text, then tokenize as `preprocess` does (the model's one truncation rule).
        features = self.preprocess([[text.strip() for text in row] for row in rows])
        features.pop("modality", None)
        return features

    @property
    def max_length(self) -> int:
        """sentence-transformers' older name for `max_seq_length`."""
        return self.max_seq_length

    @property
    def config(self) -> Any:
        """The Hugging Face model config."""
        return self.classifier.auto_model.config

    @property
    def model(self) -> nn.Module:
        """The Hugging Face sequence-classification model."""
        return self.classifier.auto_model

    @property
    def tokenizer(self) -> Any:
        """The Hugging Face tokenizer."""
        return self.classifier.tokenizer

    def forward(self, input: dict[str, torch.Tensor], **kwargs: Any) -> dict[str, torch.Tensor]:  # type: ignore[override]
        """Tokenized pairs in, the features out with 6.2's `scores`: raw logits (B, num_labels), no activation."""
        return {**input, "scores": self.classifier(dict(input))["sentence_embedding"]}

    def predict(  # type: ignore[override]
        self,
        inputs: Sequence[Any] | None = None,
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int | None = 32,
        show_progress_bar: bool | None = None,
        activation_fn: Callable[..., Any] | None = None,
        apply_softmax: bool | None = False,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        device: Any = None,
        pool: dict[str, Any] | None = None,
        chunk_size: int | None = None,
        **options: Any,
    ) -> Any:
        """Scores as sentence-transformers 6.2 returns them (see the module docstring for the types)."""
        if "task_metadata" in options:  # mteb's call: the native entry answers it (sbert/mteb_protocol.py)
            return super().predict(
                cast(Any, inputs), **{"batch_size": batch_size, "show_progress_bar": show_progress_bar, **options}
            )
        if inputs is None:
            inputs = options.pop("sentences")  # sentence-transformers' older name
        options.pop("num_workers", None)  # a no-op in sentence-transformers too
        warn_pool_unused(pool, "CrossEncoder.predict")
        if "activation_fct" in options:
            activation_fn = options.pop("activation_fct")
        single = _is_single_pair(inputs)
        pairs = [tuple(inputs)] if single else [tuple(p) for p in inputs]
        if batch_size is not None and batch_size < 1:  # None: sbert's token budget (batch_tokens)
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
        scores = self._scores(pairs, prompt_name, prompt, batch_size, show_progress_bar, activation_fn, options)
        if apply_softmax and scores.ndim > 1:
            scores = torch.softmax(scores, dim=1)
        out: Any
        if convert_to_tensor:
            out = scores.to(self.device)
        elif convert_to_numpy:
            out = scores.float().numpy() if len(scores) else np.array([])
        else:
            out = list(scores.to(self.device))
        return out[0] if single else out

    def _scores(
        self, pairs: list[Any], prompt_name: str | None, prompt: str | None, batch_size: int | None,
        show_progress_bar: bool | None, activation_fn: Callable[..., Any] | None, options: dict[str, Any],
    ) -> torch.Tensor:  # fmt: skip
        """Logits of the engine with the activation applied in torch, as the reference applies it."""
        if not pairs:
            return torch.tensor([])
        options.setdefault("show_progress", show_progress_bar)
        options.setdefault("backend", self.get_backend())
        raw = not options.pop("activation", True)  # sbert's own switch: raw logits
        logits = super().predict(pairs, batch_size=batch_size, activation=False, prompt_name=prompt_name,
                                 prompt=prompt, **options)  # fmt: skip
        scores = torch.from_numpy(np.ascontiguousarray(logits, dtype=np.float32))
        apply = activation_fn if activation_fn is not None else self.activation_fn
        with torch.inference_mode():
            return scores if raw else apply(scores)

    @renamed_kwargs(sentences="inputs", activation_fct="activation_fn")  # the reference's own pair of renames
    def rank(
        self,
        query: Any,
        documents: Sequence[Any],
        top_k: int | None = None,
        return_documents: bool = False,
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        activation_fn: Callable[..., Any] | None = None,
        **options: Any,
    ) -> list[dict[str, Any]]:
        """Documents best first: dicts with corpus_id, score (a Python float) and, if asked, text."""
        for dropped in ("apply_softmax", "convert_to_numpy", "convert_to_tensor", "num_workers", "device", "pool",
                        "chunk_size"):  # fmt: skip
            options.pop(dropped, None)  # no-ops on rank in sentence-transformers 6.2 (or one process here)
        if self.num_labels != 1:
            raise ValueError(f"rank needs a one-score cross-encoder; this one has {self.num_labels} labels")
        docs = list(documents)
        scores = self.predict([(query, d) for d in docs], prompt_name=prompt_name, prompt=prompt,
                              batch_size=batch_size, show_progress_bar=show_progress_bar,
                              activation_fn=activation_fn, convert_to_tensor=True, **options)  # fmt: skip
        values = scores.tolist() if docs else []
        return [
            {"corpus_id": int(i), "score": values[i]} | ({"text": docs[i]} if return_documents else {})
            for i in rank_order(np.asarray(values, dtype=np.float64), top_k)
        ]


def _is_single_pair(inputs: Any) -> bool:
    """One pair rather than a list of pairs, as sentence-transformers 6.3 tells them apart.

    A sequence whose first item is not itself a pair (a list, tuple or array) is one pair: `("q", "d")`, and a
    vision reranker's `(image, "text")` alike.
    """
    if isinstance(inputs, np.ndarray):
        return inputs.ndim == 1
    return isinstance(inputs, Sequence) and len(inputs) > 0 and not isinstance(inputs[0], list | tuple | np.ndarray)


def _load_or_new(
    path: str | os.PathLike[str], num_labels: int | None, device: Any, model_kwargs: dict[str, Any] | None
) -> NativeCrossEncoder:
    """A saved cross-encoder (or a causal LM) loaded, or a fresh head on a plain encoder (sentence-transformers')."""
    root = resolve_model_dir(path)
    config = layout.read_json(root / "config.json") if (root / "config.json").is_file() else {}
    architectures = config.get("architectures") or []
    # A causal LM loads as an LLM reranker (LogitScore over yes / no), saved or not, as in sentence-transformers;
    # a vision-language one too.
    if (
        is_causal_lm(architectures)
        or is_vision_reranker(root, architectures)
        or any(str(a).endswith("ForSequenceClassification") for a in architectures)
    ):
        dtype = (model_kwargs or {}).get("torch_dtype", (model_kwargs or {}).get("dtype"))
        return NativeCrossEncoder.load(root, device=device, dtype=dtype)
    return NativeCrossEncoder.new(root, num_labels=num_labels or 1, device=device)
