"""The dense kind's runtime side: backends cached per weights state, run plans, the weights digest.

Which backend and precision run, the digest behind every cache folder, and the int8 calibration.

A mixin of SentenceEncoder (kept apart so the class reads as the model, this file as how it runs); it
asks the model for `router`, `routed()`, `chain()`, `chain_dimension`, `device`, `input_module`,
`source_dir`, and the weights state of weights_state.TracksWeights.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, cast

import torch
from torch import nn

from sbert.backends import Backend, Chain, open_backend
from sbert.device import backend_dtype, precision_name
from sbert.errors import BackendError
from sbert.install_hint import install_hint
from sbert.modules import InputModule, Module, Pooling, Router, Transformer, adapter_ops
from sbert.weights_state import WeightsKey, structure_cached


class DenseHost(Protocol):
    """What the mixin asks of the SentenceEncoder it is mixed into (typed here, so no import of dense/model.py)."""

    source_dir: Path | None
    _digest: tuple[tuple[WeightsKey, str], str] | None
    _loaded_key: WeightsKey | None

    @property
    def router(self) -> Router | None: ...  # noqa: D102
    @property
    def device(self) -> torch.device: ...  # noqa: D102
    @property
    def chain_dimension(self) -> int: ...  # noqa: D102
    @property
    def input_module(self) -> InputModule: ...  # noqa: D102
    @property
    def compute_width(self) -> int | None: ...  # noqa: D102
    def chain(self) -> list[Module]: ...  # noqa: D102
    def routed(self, task: str | None = None) -> DenseHost: ...  # noqa: D102
    def as_chain(self) -> Chain: ...  # noqa: D102
    def backend(self, name: str = "torch", precision: str = "auto") -> Backend: ...  # noqa: D102
    def weights_digest(self) -> str: ...  # noqa: D102
    def weights_key(self) -> WeightsKey: ...  # noqa: D102
    def cached_engine(self, slot: Hashable, build: Callable[[], Backend]) -> Backend: ...  # noqa: D102
    def drop_engines(self, which: Callable[[Hashable], bool]) -> None: ...  # noqa: D102


class DenseRuntime:
    """Backends, run plans and the weights digest of a SentenceEncoder."""

    _digest: tuple[tuple[WeightsKey, str], str] | None = None
    _loaded_key: WeightsKey | None = None

    def as_chain(self) -> Chain:
        """What a backend sees of this model: its modules and facts about them (the default route's, for a Router)."""
        model = cast(DenseHost, self)
        if model.router is not None:
            return model.routed().as_chain()
        return Chain(tuple(model.chain()), model.chain_dimension, model.device, model.weights_digest, model.source_dir)

    @property
    def pooling_modes(self) -> tuple[str, ...]:
        """The Pooling's modes (mean, cls, lasttoken, ...), as TEI's `pooling` field names them; () without one."""
        model = cast(DenseHost, self)
        return next((tuple(m.modes) for m in model.chain() if isinstance(m, Pooling) and m.modes), ())

    def fast_tokenizer(self) -> Any:
        """The Rust tokenizer as the model tokenizes (no padding, cut at max_seq_length on its side); None if slow."""
        model = cast(DenseHost, self)
        module = model.input_module
        return module.fast_tokenizer(module.max_seq_length)

    def run_plan(self, backend: str = "torch", precision: str = "auto", processes: int = 1) -> tuple[str, str]:
        """The backend and the compute precision (fp32 / bf16 / fp16) that encode runs with these options."""
        model = cast(DenseHost, self)
        return backend, precision_name(backend_dtype(backend, precision, model.device, model.compute_width))

    def gpu_batch_tokens(self, backend: str = "torch", precision: str = "auto") -> int | None:
        """The engine's own token budget where the model runs on a GPU (packed, or padded fallbacks), else None."""
        model = cast(DenseHost, self)
        return model.backend(backend, precision).default_batch_tokens if model.device.type == "cuda" else None

    @property
    def compute_width(self) -> int | None:
        """The hidden width of the Transformer's float products (precision="auto" probes it), else None.

        None without a Transformer, and for Linears held in int8 (dtype="int8"): their products are int8 already.
        """
        from sbert.backends.torch_int8 import holds_int8

        model = cast(DenseHost, self)
        first = model.input_module
        if not isinstance(first, Transformer) or structure_cached(first, "int8", lambda: holds_int8(first)):
            return None
        return first.embedding_dimension

    def backend(self, name: str = "torch", precision: str = "auto") -> Backend:
        """The backend `name` on the model's device in `precision`, built once per weights state.

        ONNX backends export (or load the cached graph) and check it against torch on first use;
        the CUDA backend casts its copy of the weights once.
        """
        model = cast(DenseHost, self)
        if model.router is not None:
            return model.routed().backend(name, precision)
        dtype = backend_dtype(name, precision, model.device, model.compute_width)

        def build() -> Backend:
            chain = model.as_chain()
            if name != "torch" or model.device.type == "cuda":  # exported and packed paths run merged weights
                chain = replace(chain, modules=tuple(adapter_ops.merged_chain(list(chain.modules))))
            return open_backend(chain, name, model.device, dtype)

        return model.cached_engine((name, str(model.device), dtype), build)

    def image_graph(self, name: str) -> Any:
        """The image tower of an image-text model as a checked graph on runtime `name` (onnx, openvino, -int8).

        Exported once beside the model (`image-embedding.onnx`, by weights digest), pixels in, image
        vectors out; checked against torch on two probe images. SigLIP 2's variable patch grids are refused.
        """
        from sbert.backends.feature_graph import open_feature_graph
        from sbert.encoding.images import probe_images

        model = cast(DenseHost, self)

        def build() -> Any:  # probes made and checked only when the graph is first built, not on every call
            chain = model.as_chain()
            first: Any = chain.modules[0]
            if "image" not in getattr(first, "modalities", ()):
                raise BackendError(f"backend {name!r}: this model embeds text only")
            probes = first.image_features(probe_images())
            if set(probes) != {"pixel_values"}:
                raise BackendError(f"backend {name!r} runs image towers of fixed-size pixels (CLIP, SigLIP); "
                                   "this model's images (SigLIP 2 patch grids) run on the torch backend")  # fmt: skip
            return open_feature_graph(chain, name, "sentence_embedding", probes, per_token=False,
                                      stem="image-embedding")  # fmt: skip

        return model.cached_engine(("image", name), build)

    def calibrate_int8(self, sentences: Sequence[str]) -> None:
        """Calibrate the int8 backends on `sentences` (kept for rebuilds); each is quantized again on next use."""
        model = cast(DenseHost, self)
        try:
            from sbert.backends.onnx_runtime import calibrate
        except ImportError as e:
            raise BackendError(f"calibrate_int8 needs onnxruntime and onnx: {install_hint('onnx')} ({e})") from None
        calibrate(model.as_chain(), sentences)
        model.drop_engines(lambda slot: isinstance(slot, tuple) and str(slot[0]).endswith("-int8"))

    def weights_digest(self) -> str:
        """sha256 of every weight and module configuration, computed once per weights state.

        The ONNX cache, shard folders and index folders all record it; hashing a large model
        takes seconds, so it is redone only after the weights or a module's config change.
        """
        from sbert.backends.cache import model_digest

        model = cast(DenseHost, self)
        key = (model.weights_key(), json.dumps([m.get_config() for m in model.chain()], sort_keys=True))
        if model._digest is None or model._digest[0] != key:
            model._digest = (key, model_digest(cast(nn.Sequential, self)))
        return model._digest[1]

    def unchanged_since_load(self) -> bool:
        """Whether the weights are still those read from `source_dir` (no step or load since)."""
        model = cast(DenseHost, self)
        return model._loaded_key is not None and model._loaded_key == model.weights_key()
