"""sentence-transformers 6.2's `sentence_transformers.models`: modules built by 6.2's constructors, sbert's underneath.

    from sbert import SentenceTransformer, models
    transformer = models.Transformer("path/to/bert", max_seq_length=256)
    pooling = models.Pooling(transformer.get_word_embedding_dimension(), "mean")
    model = SentenceTransformer(modules=[transformer, pooling])

Each class is sbert's own module (what `sbert.load` builds from a folder) with 6.2's constructor, so a
chain built this way encodes, trains and saves as a loaded one does, and the saved folder loads in 6.2.
`MLMTransformer` (what `Transformer(path, transformer_task="fill-mask")` builds) is SPLADE's first module;
`sbert.sparse_encoder.modules` re-exports it.
The word-vector modules (WordEmbeddings with its WhitespaceTokenizer, WordWeights, CNN, LSTM, Dropout, BoW) are
sbert's own with the reference's constructors as they are, and so is WeightedLayerPooling (over a
Transformer built with `config_kwargs={"output_hidden_states": True}`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

import torch
from torch import nn

from sbert.errors import SbertError
from sbert.modules import (
    CNN,
    LSTM,
    BoW,
    Dropout,
    LayerNorm,
    Normalize,
    StaticEmbedding,
    WeightedLayerPooling,
    WordEmbeddings,
    WordWeights,
)
from sbert.modules.dense import IDENTITY
from sbert.modules.dense import Dense as _Dense
from sbert.modules.pooling import Pooling as _Pooling
from sbert.modules.router import Router as _Router
from sbert.modules.transformer import Transformer as _Transformer
from sbert.renamed_kwargs import LEGACY_POOLING_FLAGS, pooling_mode_from_flags, renamed_kwargs
from sbert.sparse.mlm import MLMTransformer as _MLMTransformer
from sbert.sparse.mlm import check_mlm_head

if TYPE_CHECKING:  # not a public name here: 6.2's models.Module is its own abstract base
    from sbert.modules import Module

T = TypeVar("T", bound=_Transformer)

# 6.2's Transformer arguments sbert takes only at their defaults (multimodal, ONNX/OpenVINO module backends).
_TRANSFORMER_DEFAULTS = {"transformer_task": "feature-extraction", "processing_kwargs": None, "backend": "torch",
                         "modality_config": None, "module_output_name": None, "unpad_inputs": None,
                         "query_length": None, "document_length": None, "query_expansion": None}  # fmt: skip


class _From62Arguments:
    """6.2's Transformer constructor over sbert's module `native` (the class after this mixin in the MRO)."""

    native: type[_Transformer] = _Transformer
    task = "feature-extraction"

    @staticmethod
    def check(model_name_or_path: str) -> None:
        """Refuse a folder before loading it (nothing to check for a plain encoder)."""

    @renamed_kwargs(model_args="model_kwargs", tokenizer_args="processor_kwargs", config_args="config_kwargs")
    def __init__(
        self,
        model_name_or_path: str,
        *,
        model_kwargs: dict[str, Any] | None = None,
        processor_kwargs: dict[str, Any] | None = None,
        config_kwargs: dict[str, Any] | None = None,
        max_seq_length: int | None = None,
        do_lower_case: bool = False,
        tokenizer_name_or_path: str | None = None,
        **others: Any,
    ) -> None:
        self.check(model_name_or_path)
        loaded = load_6_2(self.native, model_name_or_path, self.task, model_kwargs=model_kwargs,
                          processor_kwargs=processor_kwargs, config_kwargs=config_kwargs,
                          max_seq_length=max_seq_length, tokenizer_name_or_path=tokenizer_name_or_path,
                          others=others)  # fmt: skip
        super().__init__(loaded.auto_model, loaded.tokenizer, loaded.max_seq_length, do_lower_case)  # type: ignore[call-arg]


class Transformer(_From62Arguments, _Transformer):
    """`Transformer(model_name_or_path, max_seq_length=None, config_kwargs=..., ...)` as in 6.2: a local folder.

    `transformer_task="fill-mask"` gives the MLM module a SPLADE SparseEncoder is built from, as 6.2's does.
    """

    def __new__(cls, model_name_or_path: str = "", *args: Any, transformer_task: str = "feature-extraction",
                **kwargs: Any) -> Any:  # fmt: skip
        """This class, or sbert's MLM module for `transformer_task="fill-mask"` (6.2's SPLADE building block)."""
        if transformer_task == "fill-mask":  # 6.2's way to build SPLADE's MLM module: sbert's MLM class
            return MLMTransformer(model_name_or_path, *args, **kwargs)
        return super().__new__(cls)

    def get_word_embedding_dimension(self) -> int:
        """The width of the token vectors (6.2's older name for `get_embedding_dimension`)."""
        return self.embedding_dimension

    def get_embedding_dimension(self) -> int:
        """The width of the token vectors."""
        return self.get_word_embedding_dimension()


def load_6_2(native: type[T], model_name_or_path: str, task: str, *, model_kwargs: dict[str, Any] | None,
             processor_kwargs: dict[str, Any] | None, config_kwargs: dict[str, Any] | None,
             max_seq_length: int | None, tokenizer_name_or_path: str | None, others: dict[str, Any]) -> T:  # fmt: skip
    """The `native` module loaded from 6.2's Transformer arguments; one line naming any it does not take."""
    defaults = {**_TRANSFORMER_DEFAULTS, "transformer_task": task}
    unsupported = {k: v for k, v in others.items() if k not in defaults or v != defaults[k]}
    if unsupported or (tokenizer_name_or_path not in (None, model_name_or_path)) or processor_kwargs:
        names = sorted({*unsupported, *(["tokenizer_name_or_path"] if tokenizer_name_or_path else []),
                        *(["processor_kwargs"] if processor_kwargs else [])})  # fmt: skip
        raise SbertError(f"models.Transformer: {', '.join(names)} not supported by sbert (text encoders only)")
    dtype = (model_kwargs or {}).get("torch_dtype", (model_kwargs or {}).get("dtype"))
    return native.from_pretrained(model_name_or_path, max_seq_length, dtype=dtype, **(config_kwargs or {}))


class Router(_Router):
    """`Router(sub_modules, default_route=None, allow_empty_key=True, route_mappings=None)` as in 6.2."""

    def __init__(
        self,
        sub_modules: dict[str, list[Module]],
        default_route: str | None = None,
        allow_empty_key: bool = True,
        route_mappings: dict[tuple[str | None, str | None], str] | None = None,
    ) -> None:
        super().__init__(sub_modules, default_route, allow_empty_key, route_mappings)

    @classmethod
    def for_query_document(  # 6.2's argument names
        cls, query_modules: list[Module], document_modules: list[Module], default_route: str | None = "document",
        allow_empty_key: bool = True,
    ) -> Self:  # fmt: skip
        """The asymmetric retrieval layout: a "query" route and a "document" route (the default)."""
        return cls({"query": query_modules, "document": document_modules}, default_route, allow_empty_key)


Asym = Router  # 6.2 keeps the pre-v5 name for the Router


class MLMTransformer(_From62Arguments, _MLMTransformer):
    """`MLMTransformer(model_name_or_path, ...)`: 6.2's deprecated name for a fill-mask Transformer."""

    native = _MLMTransformer
    task = "fill-mask"

    @staticmethod
    def check(model_name_or_path: str) -> None:
        """A checkpoint without MLM head weights would train a random head: one line instead."""
        check_mlm_head(Path(model_name_or_path))


class Pooling(_Pooling):
    """`Pooling(embedding_dimension, pooling_mode="mean", include_prompt=True)` as in 6.3 (modes, or a list).

    v2-v5's `word_embedding_dimension=` and `pooling_mode_*_tokens=True` flags are taken as 6.3 takes them.
    """

    @renamed_kwargs(word_embedding_dimension="embedding_dimension")
    def __init__(
        self, embedding_dimension: int, pooling_mode: str | Sequence[str] = "mean", include_prompt: bool = True,
        **flags: bool,
    ) -> None:  # fmt: skip
        unknown = sorted(set(flags) - set(LEGACY_POOLING_FLAGS))
        if unknown:
            raise TypeError(f"Pooling() got unexpected keyword arguments: {', '.join(unknown)}")
        legacy = pooling_mode_from_flags(flags)
        if legacy is not None:
            warnings.warn("the pooling_mode_* flags were replaced by pooling_mode=", FutureWarning, stacklevel=3)
            pooling_mode = legacy
        super().__init__(embedding_dimension, pooling_mode if isinstance(pooling_mode, str) else list(pooling_mode),
                         include_prompt)  # fmt: skip


class Dense(_Dense):
    """`Dense(in_features, out_features, bias, activation_function=nn.Tanh(), init_weight, ...)` as in 6.2."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        activation_function: Callable[[torch.Tensor], torch.Tensor] | None = nn.Tanh(),  # noqa: B008 (6.2's default)
        init_weight: torch.Tensor | None = None,
        init_bias: torch.Tensor | None = None,
        module_input_name: str = "sentence_embedding",
        module_output_name: str | None = None,
        use_residual: bool = False,
    ) -> None:
        super().__init__(in_features, out_features, bias, _activation_path(activation_function), use_residual,
                         module_input_name, module_output_name or module_input_name)  # fmt: skip
        with torch.no_grad():
            if init_weight is not None:
                self.linear.weight.copy_(init_weight)
            if init_bias is not None:
                self.linear.bias.copy_(init_bias)


def _activation_path(activation: Callable[[torch.Tensor], torch.Tensor] | None) -> str:
    """The torch.nn class path sbert's Dense saves and loads; other callables cannot be saved, so they are refused."""
    if activation is None:
        return IDENTITY
    if not isinstance(activation, nn.Module) or not type(activation).__module__.startswith("torch.nn"):
        raise SbertError(f"models.Dense: activation_function {activation!r} is not a torch.nn module (not savable)")
    return f"{type(activation).__module__}.{type(activation).__name__}"


__all__ = ["CNN", "LSTM", "Asym", "BoW", "Dense", "Dropout", "LayerNorm", "Normalize", "Pooling", "Router",
           "StaticEmbedding", "Transformer", "WeightedLayerPooling", "WordEmbeddings", "WordWeights"]  # fmt: skip

# A package to the import system, so the reference's legacy one-class paths under it resolve (sbert/legacy_paths.py).
__path__: list[str] = []
