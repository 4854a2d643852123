"""SentenceEncoder: an ordered chain of modules that turns sentences into vectors."""

from __future__ import annotations

import copy
import functools
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Self, cast, overload

import numpy as np
import torch
from torch import nn

from sbert.dense.adapters import AdapterMethods
from sbert.dense.embedding import DenseEmbedding
from sbert.dense.loading import load_held, new_chain
from sbert.dense.runtime import DenseRuntime
from sbert.device import resolve_device
from sbert.encoding.engine import check_batch_sizes
from sbert.encoding.images import embed_images
from sbert.encoding.late_chunking import chunked_documents
from sbert.encoding.long_text import LongText, OnTruncation
from sbert.encoding.prompted import PromptPlan, plan_prompt
from sbert.errors import ModelFormatError, SbertError
from sbert.formats import layout
from sbert.formats.aliases import DEFAULT_MODEL
from sbert.formats.image_inputs import split_kinds
from sbert.formats.model_config import EncoderSettings, check_truncate_dim, model_config, read_settings
from sbert.formats.model_dirs import resolve_model_dir
from sbert.modules import (
    INPUT_MODULES,
    LIMITED_INPUT_MODULES,
    Features,
    InputModule,
    Module,
    Router,
    Transformer,
    adapter_ops,
    chain_widths,
    check_chain,
)  # fmt: skip
from sbert.modules.chain import save_chain
from sbert.modules.normalize import l2_normalize
from sbert.mteb_protocol import MtebEncoder, mteb_entry
from sbert.similarity import check_similarity, similarity_matrix
from sbert.vectors.batching import check_sentences
from sbert.weights_state import TracksWeights, WeightsKey


class SentenceEncoder(MtebEncoder, DenseEmbedding, DenseRuntime, AdapterMethods, TracksWeights, nn.Sequential):
    """A Transformer followed by pooling (and optional heads) producing one vector per sentence."""

    def __init__(self, modules: Sequence[Module], device: str | torch.device | None = None) -> None:
        super().__init__(*modules)
        check_chain(list(modules))
        # One SentenceEncoder per Router route (route modules + the modules after the Router), sharing weights.
        self._routes: dict[str, SentenceEncoder] = {}
        self.register_load_state_dict_post_hook(_weights_loaded)
        self.to(resolve_device(device))
        self.eval()
        # The folder the model was loaded from (ONNX graphs are cached beside it), if any.
        self.source_dir: Path | None = None
        self.settings = EncoderSettings()  # prompts, default prompt, truncate_dim
        self._digest: tuple[tuple[WeightsKey, str], str] | None = None
        # The `dtype` the weights were loaded with (None: fp32), so workers that reload the folder hold the same.
        self.held_dtype: str | torch.dtype | None = None
        self._loaded_key: WeightsKey | None = None

    @classmethod
    def load(
        cls,
        name_or_path: str | os.PathLike[str] = DEFAULT_MODEL,
        device: str | torch.device | None = None,
        trust_remote_code: bool = False,
        dtype: str | torch.dtype | None = None,
        truncate_dim: int | None = None,
    ) -> Self:
        """Load an alias, a local sentence-transformers or Hugging Face directory, or a Hub id.

        Weights load as fp32 whatever dtype they were stored in (`precision` picks the compute
        dtype at encode time); `dtype` ("fp16", "bf16", torch.float16, ... or "auto" for the
        stored one) keeps the weights in another dtype, as sentence-transformers' model_kwargs do.
        `dtype="int8"` holds the Transformer's Linears in int8 and no float copy of them (a CPU
        model for inference only; the Linears in a quarter of their fp32 size: backends/torch_int8.hold_int8).
        Prompts, the default prompt and truncate_dim come from config_sentence_transformers.json;
        `truncate_dim` here overrides the saved one.
        """
        root = resolve_model_dir(name_or_path)
        model = cls(load_held(root, trust_remote_code, dtype, resolve_device(device)), device=device)
        model.held_dtype = dtype  # worker processes load the folder the same way
        model.source_dir = root
        model.settings = read_settings(root)
        model.settings.truncate_dim = check_truncate_dim(
            model.settings.truncate_dim if truncate_dim is None else truncate_dim, model.chain_dimension
        )
        model._loaded_key = model.weights_key()
        return model

    @classmethod
    def from_transformer(
        cls,
        name_or_path: str | os.PathLike[str],
        pooling: str | list[str] = "mean",
        normalize: bool = False,
        max_seq_length: int | None = None,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        dense: Sequence[str] = (),
    ) -> Self:
        """Build a new encoder (alias, local dir or Hub id of a Hugging Face encoder) plus a head.

        `pooling`: any Pooling mode (mean, max, cls, lasttoken, weightedmean, mean_sqrt_len_tokens, or a
        list, concatenated), `cnn` (CNN-SBERT) or `ngram-cnn` (IS-BERT). `dense`: projections after it,
        `OUT[:ACTIVATION]` each (e.g. "256:tanh"). Weights load as fp32 unless `dtype` says otherwise.
        """
        return cls(new_chain(resolve_model_dir(name_or_path), pooling, normalize, max_seq_length, dtype, dense), device)

    @property
    def router(self) -> Router | None:
        """The Router the chain starts with, if any."""
        first = self[0]
        return first if isinstance(first, Router) else None

    def routed(self, task: str | None = None) -> SentenceEncoder:
        """The model `task` runs: itself, or for a Router model its route for `task` (None: the default route).

        A route is a SentenceEncoder of the route's modules and the ones after the Router, sharing their
        weights, settings and source folder; it is built once, so its backends are cached like any model's.
        """
        router = self.router
        if router is None:
            return self
        name = router.route_name(task)
        view = self._routes.get(name)
        if view is None:
            view = SentenceEncoder([*router.modules_of(name), *self.chain()[1:]], device=self.device)
            view.train(self.training)
            view.settings, view.source_dir, view._loaded_key = self.settings, self.source_dir, None
            self._routes[name] = view
        return view

    # Single-vector outputs: trained by sentence-vector objectives, never by token-level ones (losses/base.py).
    token_level = False

    def column_tokens(self, column: int) -> Callable[[Sequence[str]], tuple[list[list[int]], list[int]]]:
        """How training tokenizes text column `column`: the same way for every column of a single-vector model.

        An image-text model's column may hold images instead (modules/multimodal.py's `column_rows`).
        """
        return getattr(self.input_module, "column_rows", self.input_module.token_ids)

    def column_pad(self, column: int) -> Callable[[Sequence[Sequence[int]]], Features]:
        """How training pads column `column`'s token ids (one padding for every column here).

        An image-text model's columns pad apart (a column of images and one of texts never share a batch).
        """
        if "image" in self.modalities:
            return functools.partial(self.input_module.pad)
        return self.input_module.pad

    @property
    def input_module(self) -> InputModule:
        """What turns texts into token ids: the first module (of the default route, for a Router model)."""
        first = self.routed()[0]
        assert isinstance(first, INPUT_MODULES)
        return first

    @property
    def modalities(self) -> tuple[str, ...]:
        """The input kinds the model embeds: text, and images for a two-tower image-text model."""
        return tuple(getattr(self.input_module, "modalities", ("text",)))

    @property
    def transformer(self) -> Transformer:
        """The encoder at the head of the chain (of the default route, for a Router model)."""
        first = self.input_module
        if not isinstance(first, Transformer):
            raise ModelFormatError(f"this model starts with {type(first).__name__}, not a Transformer")
        return first

    @property
    def device(self) -> torch.device:
        """Where the parameters live (the buffers, for a chain without any: a BoW; else the CPU)."""
        held = next(itertools.chain(self.parameters(), self.buffers()), None)
        return held.device if held is not None else torch.device("cpu")

    @property
    def max_seq_length(self) -> int:
        """Token limit per input (inputs are truncated beyond it); a Router's largest, as sentence-transformers says."""
        router = self.router
        if router is None:
            return self.input_module.max_seq_length
        starts = [route[0] for route in router.route_lists().values() if route]
        limits = [m.max_seq_length for m in starts if isinstance(m, INPUT_MODULES)]
        return max(limits, default=self.input_module.max_seq_length)

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        # Every input module with a limit that starts a route takes it, as sentence-transformers' Router does.
        router = self.router
        for route in router.route_lists().values() if router else [self.chain()]:
            if isinstance(route[0], LIMITED_INPUT_MODULES):
                route[0].max_seq_length = value

    @property
    def embedding_dimension(self) -> int:
        """Size of the sentence vector encode returns (truncate_dim when the model has one)."""
        return self.settings.truncate_dim or self.chain_dimension

    @property
    def chain_dimension(self) -> int:
        """Size of the vector the module chain produces, before any truncation."""
        return chain_widths(self.chain())[-1]

    def chain(self) -> list[Module]:
        """The modules in order, typed as sbert modules."""
        return [cast(Module, m) for m in self]

    def forward(self, features: Features) -> Features:
        """Run every module in order on the features dict."""
        for module in self.chain():
            features = module(features)
        return features

    def tokenize(self, texts: Sequence[str]) -> Features:
        """Padded token features for `forward` (on the model's device)."""
        return {k: v.to(self.device) for k, v in self.input_module.tokenize(texts).items()}

    @overload
    def encode(
        self,
        sentences: str | Iterable[str],
        batch_size: int | None = ...,
        normalize: bool = ...,
        show_progress: bool | None = ...,
        device: str | torch.device | None = ...,
        convert_to: Literal["numpy"] = ...,
        on_truncation: OnTruncation = ...,
        backend: str = ...,
        batch_tokens: int | None = ...,
        long_text: LongText = ...,
        precision: str = ...,
        devices: Sequence[str] | None = ...,
        prompt_name: str | None = ...,
        prompt: str | None = ...,
        truncate_dim: int | None = ...,
        task: str | None = ...,
    ) -> np.ndarray: ...
    @overload
    def encode(
        self,
        sentences: str | Iterable[str],
        batch_size: int | None = ...,
        normalize: bool = ...,
        show_progress: bool | None = ...,
        device: str | torch.device | None = ...,
        *,
        convert_to: Literal["torch"],
        on_truncation: OnTruncation = ...,
        backend: str = ...,
        batch_tokens: int | None = ...,
        long_text: LongText = ...,
        precision: str = ...,
        devices: Sequence[str] | None = ...,
        prompt_name: str | None = ...,
        prompt: str | None = ...,
        truncate_dim: int | None = ...,
        task: str | None = ...,
    ) -> torch.Tensor: ...

    @mteb_entry
    def encode(
        self,
        sentences: str | Iterable[str],
        batch_size: int | None = None,
        normalize: bool = False,
        show_progress: bool | None = None,
        device: str | torch.device | None = None,
        convert_to: Literal["numpy", "torch"] = "numpy",
        on_truncation: OnTruncation = "warn",
        backend: str = "torch",
        batch_tokens: int | None = None,
        long_text: LongText = "truncate",
        precision: str = "auto",
        devices: Sequence[str] | None = None,
        prompt_name: str | None = None,
        prompt: str | None = None,
        truncate_dim: int | None = None,
        task: str | None = None,
    ) -> np.ndarray | torch.Tensor:
        """Embed sentences: float32 (n, dim) for a list, (dim,) for a single string.

        Inputs are sorted by token length and batched by a token budget (the backend's
        default, or `batch_tokens`; `batch_size` alone gives fixed-size batches); rows come
        back in input order. `backend`: torch (CPU, or the packed pipelined CUDA engine),
        onnx or onnx-int8. `precision`: auto (bf16/fp16 on CUDA, fp32 elsewhere), fp32, bf16,
        fp16. `devices=["cuda:0", "cuda:1"]` runs one worker process per device.
        `long_text="chunk"` embeds inputs beyond max_seq_length as the mean of overlapping windows.
        `prompt_name` (one of the model's prompts) or `prompt` (any text) goes in front of every
        input; else `task` ("query" / "document") picks the model's prompt for it; else the model's
        default prompt applies (encoding/prompted.py decides, for every caller). `truncate_dim` keeps the
        leading dimensions (the model's own truncate_dim by default); `normalize` applies after it.
        """
        if self.router is not None:  # the route's own model encodes: its chain, tokenizer and backends
            options = {k: v for k, v in locals().items() if k not in ("self", "sentences", "__class__")}
            return self.routed(task).encode(sentences, **options)
        multimodal = len(self.modalities) > 1
        if multimodal and isinstance(sentences, Iterator):
            sentences = list(sentences)  # read once: looking for images must not use up a generator of texts
        chat = "message" in self.modalities  # a VLM embedder: texts through its chat template too
        found = split_kinds(sentences, self.modalities, text_as_kind=chat) if multimodal else None
        texts, single = (found[1], found[2]) if found is not None else check_sentences(sentences)
        check_batch_sizes(batch_size, batch_tokens)
        width = check_truncate_dim(truncate_dim, self.chain_dimension) or self.settings.truncate_dim
        plan = self.prompt_plan(task=task, prompt_name=prompt_name, prompt=prompt)
        if device is not None:
            self.to(resolve_device(device))
        if found is not None:  # one engine: the backend's chain, its threads and batches (encoding/images.py)
            kind = found[0]
            graph = self.image_graph(backend) if backend != "torch" and kind == "image" else None  # ONNX / OpenVINO
            engine = self.backend("torch" if graph else backend, precision)
            out = torch.from_numpy(embed_images(engine, texts, self.chain_dimension, batch_size, show_progress, graph,
                                                kind, plan.text if chat else ""))  # fmt: skip
        elif devices:
            from sbert.encoding.multi_device import encode_on_devices

            options = {"batch_size": batch_size, "batch_tokens": batch_tokens, "on_truncation": on_truncation,
                       "backend": backend, "long_text": long_text, "precision": precision, "prompt": plan.text,
                       "truncate_dim": self.chain_dimension}  # fmt: skip
            out = torch.from_numpy(encode_on_devices(self._engine_view(), texts, list(devices), options, show_progress))
        else:
            out = self._embed(texts, plan, batch_size, batch_tokens, show_progress, on_truncation, long_text,
                              backend, precision)  # fmt: skip
        out = out[..., :width] if width else out
        if normalize:
            out = l2_normalize(out)
        result = out[0] if single else out
        return result.numpy() if convert_to == "numpy" else result

    def encode_query(self, sentences: str | Iterable[str], **options: Any) -> Any:
        """`encode` with the model's query prompt ("query"), when it has one (else its default prompt)."""
        options.setdefault("task", "query")
        return self.encode(sentences, **options)

    def encode_document(self, sentences: str | Iterable[str], **options: Any) -> Any:
        """`encode` with the model's document prompt ("document", "passage" or "corpus"), when it has one.

        `chunks=` (per text, a list of (start_char, end_char)): late chunking, per text a float32 (n_chunks, dim)
        array of its chunks' vectors from one pass over the whole text (encoding/late_chunking.py).
        """
        options.setdefault("task", "document")
        if options.get("chunks") is not None:
            return chunked_documents(self, sentences, options)
        options.pop("chunks", None)
        return self.encode(sentences, **options)

    @property
    def similarity_fn_name(self) -> str:
        """cosine, dot, euclidean or manhattan: what `similarity`, evaluation, search and the server score with."""
        return self.settings.similarity_fn_name

    @similarity_fn_name.setter
    def similarity_fn_name(self, name: str) -> None:
        self.settings.similarity_fn_name = check_similarity(name)

    def similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """float32 (n, m): the model's similarity of every row of `a` with every row of `b`."""
        return similarity_matrix(a, b, self.similarity_fn_name)

    def _engine_view(self) -> SentenceEncoder:
        """This model as a plain SentenceEncoder (same modules, nothing copied): what workers call sbert's encode on.

        A subclass may give `encode` another calling convention (compat.SentenceTransformer does); the view is
        a shallow copy whose class is this one, its engine cache left behind (TracksWeights.__getstate__).
        """
        view = copy.copy(self)
        view.__class__ = SentenceEncoder
        return view

    def prompt_plan(
        self, *, task: str | None = None, prompt_name: str | None = None, prompt: str | None = None
    ) -> PromptPlan:
        """The prompt text a call puts in front of each input and the leading tokens pooling skips."""
        return plan_prompt(self.settings, self.chain(), task=task, prompt_name=prompt_name, prompt=prompt)

    def mark_weights_changed(self) -> None:
        """Say that the weights changed in a way torch does not track (writes through `.data`); routes too."""
        super().mark_weights_changed()
        for view in getattr(self, "_routes", {}).values():  # routes share these weights
            view.mark_weights_changed()

    def training_chain(self) -> SentenceEncoder:
        """What sbert's training engine trains for this model: the model itself."""
        return self

    def save(
        self, path: str | os.PathLike[str], extras: Callable[[Path], None] | None = None, merge_adapter: bool = False
    ) -> None:
        """Write the sentence-transformers layout atomically: a kill mid-save keeps the old copy.

        `extras` may add files (a model card, trained heads) inside the same atomic write. A model with a
        LoRA adapter writes the adapter alone (PEFT's layout), or with `merge_adapter` the merged weights.
        """
        from sbert.backends.torch_int8 import holds_int8

        if holds_int8(self):
            raise SbertError(f"{path}: this model holds its weights in int8 (loaded with dtype='int8') and cannot be "
                             "saved; load the original folder without dtype to save or train")  # fmt: skip
        modules = adapter_ops.merged_chain(self.chain()) if merge_adapter else self.chain()
        with layout.atomic_directory(path) as tmp:
            save_chain(tmp, modules)
            layout.write_json(tmp / layout.MODEL_CONFIG_FILE, model_config(self.settings))
            if extras is not None:
                extras(tmp)


def _weights_loaded(model: SentenceEncoder, keys: object) -> None:
    # A module-level function, not a lambda: the model stays picklable (deepcopy, worker processes).
    model.mark_weights_changed()
