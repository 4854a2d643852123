"""`MultiVectorEncoder`: sentence-transformers 6.2's constructor and return types on sbert's ColBERT encoder.

A thin subclass of `sbert.multivector.MultiVectorEncoder` (one engine). As in 6.2:
`MultiVectorEncoder(path)` loads (a 6.2 MultiVectorEncoder folder, or PyLate's; a plain Hugging Face
encoder gets 6.2's new ColBERT head); `encode` returns a list of
(n_tokens, dim) torch tensors (one tensor for a single string), numpy arrays with `convert_to_numpy=True`;
`encode(..., task=...)` routes (length, expansion, skiplist) without adding the task's prompt, which
`encode_query` / `encode_document` add; `similarity` / `similarity_pairwise` return torch tensors.
sbert's own spelling keeps its meaning: `encode(..., output="list" | "packed")` returns what sbert's
native class returns.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import torch

from sbert.compat.constructor_options import check_options
from sbert.compat.conventions import ModelFacts, TaskEncodes, apply_prompts, routed_prompt
from sbert.compat.model_card import MultiVectorEncoderModelCardData
from sbert.compat.model_parts import warn_pool_unused
from sbert.errors import SbertError
from sbert.formats.layout import MODULES_FILE
from sbert.formats.model_dirs import resolve_model_dir
from sbert.modules import Module
from sbert.modules.multi_vector_mask import MultiVectorMask
from sbert.multivector.layout import MultiVectorSettings
from sbert.multivector.loading import is_page_model_dir
from sbert.multivector.model import MultiVectorEncoder as NativeMultiVectorEncoder
from sbert.multivector.tokens import refuse_token_pooling, served_width


class MultiVectorEncoder(ModelFacts, TaskEncodes, NativeMultiVectorEncoder):  # type: ignore[misc]
    """`MultiVectorEncoder("path/to/colbert")` loads; `encode` answers as sentence-transformers 6.2's does."""

    native_class = NativeMultiVectorEncoder  # what `sbert.native.native()` gives the server, index and trainer
    model_type = "MultiVectorEncoder"
    model_card_data_class = MultiVectorEncoderModelCardData
    SUPPORTED_SIMILARITY_FN_NAMES = ("maxsim", "meanmaxsim")  # type: ignore[assignment]  # 6.2's two

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str] | None = None,
        *,
        modules: Sequence[Module] | None = None,
        device: str | torch.device | None = None,
        prompts: dict[str, str] | None = None,
        default_prompt_name: str | None = None,
        trust_remote_code: bool = False,
        model_card_data: MultiVectorEncoderModelCardData | None = None,
        similarity_fn_name: str | None = None,
        backend: str = "torch",
        token_pooling: Any = None,
        truncate_dim: int | None = None,
        **unused: Any,  # the reference's other keywords: compat/constructor_options.py
    ) -> None:
        refuse_token_pooling(token_pooling, "MultiVectorEncoder")
        check_options("MultiVectorEncoder", unused)
        self.model_card_data = model_card_data
        self.set_backend(backend)
        if modules is not None:  # built modules: Transformer, token Dense, Normalize
            if any(isinstance(m, MultiVectorMask) and m.get_config() for m in modules):
                raise SbertError("MultiVectorEncoder(modules=[...]): a MultiVectorMask's skiplist is read from a "
                                 "saved folder; save the model with its mask and load that folder")  # fmt: skip
            super().__init__(list(modules), device=device)
        else:
            if model_name_or_path is None:
                raise SbertError("MultiVectorEncoder(model_name_or_path): a ColBERT folder is required (or modules=)")
            loaded = _load_or_new(model_name_or_path, device, trust_remote_code)
            super().__init__(loaded.chain(), loaded.mv_settings, device=loaded.device)
            self.settings, self.source_dir = loaded.settings, loaded.source_dir
        self.train_task_prompts = False  # 6.2's trainer routes columns by task and adds no prompt
        apply_prompts(self.settings, prompts, default_prompt_name)
        if similarity_fn_name is not None:
            if similarity_fn_name not in self.SUPPORTED_SIMILARITY_FN_NAMES:
                raise SbertError(f"similarity_fn_name {similarity_fn_name!r}: a multi-vector model scores by "
                                 "maxsim or meanmaxsim")  # fmt: skip
            self.settings.similarity_fn_name = similarity_fn_name
        if truncate_dim is not None:  # saved with the model, as 6.3 saves it (else the folder's own)
            self.truncate_dim = truncate_dim

    @property
    def truncate_dim(self) -> int | None:
        """The token width encode cuts to by default (None: the whole vector)."""
        return self.settings.truncate_dim

    @truncate_dim.setter
    def truncate_dim(self, value: int | None) -> None:
        if value is not None:
            served_width(self.head_dimension, value)
        self.settings.truncate_dim = value

    @classmethod
    def from_modules(
        cls, modules: Sequence[Module], settings: MultiVectorSettings | None = None,
        device: str | torch.device | None = None,
    ) -> Self:  # fmt: skip
        """The native constructors (load, from_transformer) build the drop-in class around the same modules."""
        model = cls.__new__(cls)
        NativeMultiVectorEncoder.__init__(model, modules, settings, device=device)
        model.train_task_prompts = False
        return model

    def is_singular_input(self, inputs: Any) -> bool:
        """Whether `inputs` is one text rather than a list of them."""
        return isinstance(inputs, str)

    def get_embedding_dimension(self) -> int:
        """The width of every token vector encode returns (`truncate_dim`'s where one is set)."""
        return self.embedding_dimension

    def encode(  # type: ignore[override]
        self,
        inputs: str | Sequence[str] | None = None,
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        output_value: str | None = "token_embeddings",
        convert_to_numpy: bool = False,
        device: Any = None,
        normalize_embeddings: bool = False,
        token_pooling: Any = None,
        truncate_dim: int | None = None,
        pool: dict[str, Any] | None = None,
        chunk_size: int | None = None,
        task: str | None = None,
        **options: Any,
    ) -> Any:
        """Token vectors as sentence-transformers 6.2 returns them (see the module docstring for the types)."""
        if "task_metadata" in options or "output" in options:  # mteb's call, or sbert's own spelling
            return super().encode(cast_inputs(inputs), task=task, prompt_name=prompt_name, prompt=prompt, **options)
        extras = {name: options.pop(name) for name in NATIVE_EXTRAS & set(options)}  # sbert's own keywords
        _refuse(output_value, token_pooling, options)
        warn_pool_unused(pool, "MultiVectorEncoder.encode")
        if batch_size <= 0:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}.")
        prompt = routed_prompt(self.settings, task, prompt_name, prompt)
        single = isinstance(inputs, str)
        extras = {"show_progress": bool(show_progress_bar), "backend": self.get_backend(), **extras}
        mats = super().encode(cast_inputs(inputs), task=task, prompt_name=prompt_name, prompt=prompt,
                              batch_size=batch_size, truncate_dim=truncate_dim, **extras)  # fmt: skip
        rows: list[np.ndarray] = [mats] if single else list(mats)
        if normalize_embeddings:
            rows = [r / np.maximum(np.linalg.norm(r, axis=-1, keepdims=True), 1e-12) for r in rows]
        out: list[Any] = rows if convert_to_numpy else [torch.from_numpy(r).to(self.device) for r in rows]
        return out[0] if single else out

    def similarity(self, embeddings1: Any, embeddings2: Any, **kwargs: Any) -> torch.Tensor:  # type: ignore[override]
        """(n1, n2) MaxSim scores as a torch tensor (MeanMaxSim for `length_normalize=True` or that function)."""
        mean = bool(kwargs.pop("length_normalize", self.similarity_fn_name == "meanmaxsim"))
        return _maxsim(embeddings1, embeddings2, mean, pairwise=False)

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any, **kwargs: Any) -> torch.Tensor:  # type: ignore[override]
        """(n,) MaxSim of the i-th of each, as a torch tensor."""
        mean = bool(kwargs.pop("length_normalize", self.similarity_fn_name == "meanmaxsim"))
        return _maxsim(embeddings1, embeddings2, mean, pairwise=True)


def _load_or_new(path: str | os.PathLike[str], device: Any, trust_remote_code: bool) -> NativeMultiVectorEncoder:
    """A saved multi-vector folder loads; a plain Hugging Face encoder gets 6.2's new ColBERT head.

    6.2's new head: a 128-wide projection of every token without bias, then unit length, no prompts,
    no skiplist, the encoder's own length (its random weights are the projection's own initialisation).
    """
    root = resolve_model_dir(path)
    if (root / MODULES_FILE).is_file() or is_page_model_dir(root):  # a ColPali-class model needs no new head
        return NativeMultiVectorEncoder.load(root, device=device, trust_remote_code=trust_remote_code)
    return NativeMultiVectorEncoder.from_transformer(root, dim=128, device=device,
                                                     prompts={"query": "", "document": ""})  # fmt: skip


# sbert's keywords of the native encode that the reference's signature lacks (backend, precision, batch_tokens,
# token_format, show_progress): taken as extra keywords, as the dense drop-in takes them. `output` changes
# the return type, so it stays the native entry's own.
NATIVE_EXTRAS = frozenset(inspect.signature(NativeMultiVectorEncoder.encode).parameters) - {
    "self", "sentences", "task", "prompt_name", "prompt", "batch_size", "truncate_dim", "output"}  # fmt: skip


def cast_inputs(inputs: Any) -> Any:
    """A string or a list of texts (a numpy array of strings as its list, as 6.2 reads it)."""
    return inputs.tolist() if isinstance(inputs, np.ndarray) else inputs


def _refuse(output_value: str | None, token_pooling: Any, options: dict[str, Any]) -> None:
    """One line for 6.2's options sbert's multi-vector encode does not take."""
    if "convert_to_tensor" in options:  # 6.2's own message: there is nothing to stack
        raise ValueError("MultiVectorEncoder.encode() has no `convert_to_tensor`: multi-vector embeddings are "
                         "variable-length; encoding already returns a list of tensors")  # fmt: skip
    if output_value != "token_embeddings":
        raise SbertError(f"MultiVectorEncoder.encode: output_value={output_value!r} (raw feature dicts) is not "
                         "supported by sbert; token_embeddings is")  # fmt: skip
    refuse_token_pooling(token_pooling, "MultiVectorEncoder.encode")
    unknown = sorted(set(options) - {"sentences", "processing_kwargs"})
    if unknown:
        raise ValueError(f"MultiVectorEncoder.encode() has been called with additional keyword arguments that "
                         f"this model does not use: {unknown}.")  # fmt: skip


def _maxsim(embeddings1: Any, embeddings2: Any, mean: bool, pairwise: bool) -> torch.Tensor:
    """Scores of token matrices (tensors or arrays, a list or one padded 3-D tensor) by sbert's MaxSim."""
    from sbert.vectors.maxsim import maxsim_matrix, maxsim_pairs

    left, right = _as_arrays(embeddings1), _as_arrays(embeddings2)
    scores = (maxsim_pairs if pairwise else maxsim_matrix)(left, right, mean=mean)
    return torch.from_numpy(np.asarray(scores, dtype=np.float32))


def _as_arrays(embeddings: Any) -> list[np.ndarray]:
    """A list of float32 (n_tokens, dim) arrays from a list of tensors or arrays, or one 2-D / 3-D array."""
    if isinstance(embeddings, torch.Tensor | np.ndarray) and embeddings.ndim == 2:
        embeddings = [embeddings]
    return [np.asarray(e.detach().cpu().float() if isinstance(e, torch.Tensor) else e, dtype=np.float32)
            for e in embeddings]  # fmt: skip
