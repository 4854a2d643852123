"""`SentenceTransformer`: sentence-transformers' name and calling conventions on sbert's dense encoder.

A thin subclass of `SentenceEncoder` (one engine): the constructor loads a name or folder, and the
methods take sentence-transformers 6.2's arguments with their meaning and return its types (numpy by
default, torch tensors for `convert_to_tensor` and from `similarity`, a list of tensors for
`convert_to_numpy=False`). Where the two libraries use one word for two things, the name keeps
sentence-transformers' meaning here: `precision` is the output's quantization ("float32", "int8",
"uint8", "binary", "ubinary"); sbert's compute dtype is the extra keyword `compute_precision`.
sbert's other extras (`backend`, `batch_tokens`, `long_text`, `dtype`) are extra keywords too.
docs/migrating.md lists what differs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

import numpy as np
import torch

from sbert.compat.constructor_options import check_options
from sbert.compat.conventions import ModelFacts, TaskEncodes, apply_prompts, routed_prompt
from sbert.compat.model_card import SentenceTransformerModelCardData
from sbert.dense.model import SentenceEncoder
from sbert.errors import SbertError
from sbert.formats.aliases import DEFAULT_MODEL
from sbert.formats.model_config import check_truncate_dim
from sbert.modules import Module
from sbert.renamed_kwargs import renamed_kwargs
from sbert.search.quantize import PRECISIONS as QUANTIZED
from sbert.search.quantize import quantize_embeddings
from sbert.similarity import pairwise_similarity
from sbert.util import float_tensor


class SentenceTransformer(ModelFacts, TaskEncodes, SentenceEncoder):  # type: ignore[misc]
    """`SentenceTransformer("all-MiniLM-L6-v2")` loads; `encode` answers as sentence-transformers' does."""

    native_class = SentenceEncoder  # what `sbert.native.native()` gives the trainer, evaluators, server and index
    model_type = "SentenceTransformer"

    @renamed_kwargs(tokenizer_kwargs="processor_kwargs")
    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str] | Sequence[Any] | None = None,
        modules: Sequence[Any] | None = None,
        device: str | torch.device | None = None,
        prompts: dict[str, str] | None = None,
        default_prompt_name: str | None = None,
        similarity_fn_name: str | None = None,
        trust_remote_code: bool = False,
        truncate_dim: int | None = None,
        model_kwargs: dict[str, Any] | None = None,
        *,
        backend: str = "torch",
        model_card_data: SentenceTransformerModelCardData | None = None,
        **unused: Any,  # the reference's other keywords: compat/constructor_options.py
    ) -> None:
        check_options("SentenceTransformer", unused, model_kwargs)
        self.model_card_data = model_card_data
        self.set_backend(backend)
        chain = modules if modules is not None else model_name_or_path
        if chain is not None and not isinstance(chain, str | os.PathLike):  # a module list (sbert's own load too)
            super().__init__(list(cast(Sequence[Module], chain)), device=device)
            self._apply_settings(prompts, default_prompt_name, similarity_fn_name, truncate_dim)
            return
        dtype = (model_kwargs or {}).get("torch_dtype", (model_kwargs or {}).get("dtype"))
        loaded = SentenceEncoder.load(cast(str, model_name_or_path or DEFAULT_MODEL), device=device,
                                      trust_remote_code=trust_remote_code, dtype=dtype,
                                      truncate_dim=truncate_dim)  # fmt: skip
        super().__init__(loaded.chain(), device=loaded.device)  # the loaded modules themselves: nothing copied
        self.source_dir, self.settings, self.held_dtype = loaded.source_dir, loaded.settings, loaded.held_dtype
        self._loaded_key = self.weights_key()
        self._apply_settings(prompts, default_prompt_name, similarity_fn_name, None)

    def _apply_settings(
        self, prompts: dict[str, str] | None, default: str | None, similarity: str | None, truncate_dim: int | None
    ) -> None:
        # 6.2 starts every model with empty query and document prompts, so prompt_name="query" always resolves.
        self.settings.prompts = {"query": "", "document": "", **self.settings.prompts}
        apply_prompts(self.settings, prompts, default)
        if similarity is not None:
            self.similarity_fn_name = similarity
        if truncate_dim is not None:
            self.settings.truncate_dim = check_truncate_dim(truncate_dim, self.chain_dimension)

    def forward(self, input: dict[str, torch.Tensor], **kwargs: Any) -> dict[str, torch.Tensor]:  # type: ignore[override]
        """Every module in turn on tokenized features (6.2's argument name; its module kwargs are not used)."""
        return cast(dict[str, torch.Tensor], super().forward(input))

    def encode(  # type: ignore[override]
        self,
        inputs: Any = None,
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        output_value: str | None = "sentence_embedding",
        precision: str = "float32",
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        device: str | torch.device | list[str | torch.device] | None = None,
        normalize_embeddings: bool = False,
        truncate_dim: int | None = None,
        pool: dict[str, Any] | None = None,
        chunk_size: int | None = None,
        **kwargs: Any,
    ) -> Any:
        """Embeddings as sentence-transformers 6.2 returns them (see the module docstring for the types)."""
        if "task_metadata" in kwargs:  # mteb's call: the native entry answers it (sbert/mteb_protocol.py)
            return super().encode(
                cast(Any, inputs), **{"batch_size": batch_size, "show_progress_bar": show_progress_bar, **kwargs}
            )
        if inputs is None:
            inputs = kwargs.pop("sentences")  # sentence-transformers' older name
        # Nothing to embed: 6.2's empty answers, unshaped (an image has no length).
        if not isinstance(inputs, str) and hasattr(inputs, "__len__") and len(inputs) == 0:
            return torch.tensor([]) if convert_to_tensor else np.asarray([]) if convert_to_numpy else []
        if "show_progress" in kwargs:  # sbert's names for the reference's own options
            show_progress_bar = kwargs.pop("show_progress")
        normalize_embeddings = kwargs.pop("normalize", normalize_embeddings)
        prompt = routed_prompt(self.settings, kwargs.get("task"), prompt_name, prompt)
        if output_value != "sentence_embedding":
            return self._outputs(inputs, output_value, prompt_name, prompt, batch_size, kwargs.get("task"))
        if precision not in QUANTIZED:
            raise SbertError(f"precision={precision!r}: use one of {', '.join(QUANTIZED)} (the compute dtype is "
                             "compute_precision=)")  # fmt: skip
        devices = [str(d) for d in device] if isinstance(device, list) else kwargs.pop("devices", None)
        if pool is not None:
            devices = list(pool["devices"])
        one_device = None if isinstance(device, list) else device
        options: dict[str, Any] = {"precision": kwargs.pop("compute_precision", "auto"), "backend": self.get_backend(),
                                   **kwargs}  # fmt: skip
        vectors = super().encode(inputs, batch_size=batch_size, normalize=normalize_embeddings,
                                 show_progress=show_progress_bar, device=None if devices else one_device,
                                 devices=devices, prompt_name=prompt_name, prompt=prompt, truncate_dim=truncate_dim,
                                 **options)  # fmt: skip
        return _as_returned(np.asarray(vectors), precision, convert_to_numpy, convert_to_tensor, self.device)

    def _outputs(
        self, inputs: str | Sequence[str], name: str | None, prompt_name: str | None, prompt: str | None,
        batch_size: int, task: str | None,
    ) -> Any:  # fmt: skip
        """`output_value="token_embeddings"`: each text's token vectors (its padding cut), or None: every output.

        The chain's forward on padded batches, as sentence-transformers computes them: a (tokens, dim) tensor
        per text on the model's device, or a dict of that text's features per text.
        """
        if name not in ("token_embeddings", None):
            raise SbertError(f"output_value={name!r}: use sentence_embedding, token_embeddings or None")
        single = isinstance(inputs, str)
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        text = self.settings.resolve_prompt(task=task, prompt_name=prompt_name, prompt=prompt)
        rows: list[Any] = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                batch = [text + t for t in texts[start : start + batch_size]]
                features = self(self.tokenize(batch))
                rows.extend(_per_text(features, len(batch), name))
        return rows[0] if single else rows

    def similarity(self, embeddings1: Any, embeddings2: Any) -> torch.Tensor:  # type: ignore[override]
        """(n, m) torch tensor: the model's similarity function of every pair of rows."""
        scores = super().similarity(_numpy(embeddings1), _numpy(embeddings2))
        return torch.from_numpy(np.asarray(scores, dtype=np.float32))

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> torch.Tensor:  # type: ignore[override]
        """(n,) torch tensor: the model's similarity of row i of `embeddings1` with row i of `embeddings2`."""
        pairs = pairwise_similarity(_numpy(embeddings1), _numpy(embeddings2), self.similarity_fn_name)
        return torch.from_numpy(np.asarray(pairs, dtype=np.float32))

    def get_embedding_dimension(self) -> int:
        """The width of the vectors `encode` returns (truncate_dim applied): 6.2's name."""
        return int(self.settings.truncate_dim or self.embedding_dimension)

    get_sentence_embedding_dimension = get_embedding_dimension  # the older name

    @property
    def prompts(self) -> dict[str, str]:
        """The model's prompts by name (the saved ones and the constructor's); assignable."""
        return self.settings.prompts

    @prompts.setter
    def prompts(self, value: dict[str, str]) -> None:
        self.settings.prompts = dict(value)

    @property
    def default_prompt_name(self) -> str | None:
        """The prompt `encode` uses when none is named, or None."""
        return self.settings.default_prompt_name

    @default_prompt_name.setter
    def default_prompt_name(self, name: str | None) -> None:
        if name is None:
            self.settings.default_prompt_name = None
        else:
            apply_prompts(self.settings, None, name)

    @property
    def truncate_dim(self) -> int | None:
        """The leading dimensions `encode` keeps (None: all); assignable, checked against the model's width."""
        return self.settings.truncate_dim

    @truncate_dim.setter
    def truncate_dim(self, value: int | None) -> None:
        self.settings.truncate_dim = None if value is None else check_truncate_dim(value, self.chain_dimension)

    def is_singular_input(self, inputs: Any) -> bool:
        """Whether `inputs` is one input (a text, or a {"text": ...} dict) rather than a list of them."""
        return isinstance(inputs, str | dict)

    def encode_multi_process(
        self, sentences: list[str], pool: dict[str, Any], prompt_name: str | None = None, prompt: str | None = None,
        batch_size: int = 32, chunk_size: int | None = None, show_progress_bar: bool | None = None,
        precision: str = "float32", normalize_embeddings: bool = False, truncate_dim: int | None = None,
    ) -> np.ndarray:  # fmt: skip
        """`encode(..., pool=pool)`: the older call for encoding on several devices."""
        return cast(np.ndarray, self.encode(sentences, prompt_name=prompt_name, prompt=prompt, batch_size=batch_size,
                                            show_progress_bar=show_progress_bar, precision=precision,
                                            normalize_embeddings=normalize_embeddings, truncate_dim=truncate_dim,
                                            pool=pool, chunk_size=chunk_size))  # fmt: skip

    @property
    def tokenizer(self) -> Any:
        """The Hugging Face tokenizer the Transformer module uses."""
        return self.transformer.tokenizer

    @contextlib.contextmanager
    def truncate_embeddings(self, truncate_dim: int | None) -> Iterator[None]:
        """Within the block, `encode` keeps the leading `truncate_dim` dimensions (6.2's name)."""
        before = self.settings.truncate_dim
        self.truncate_dim = truncate_dim
        try:
            yield
        finally:
            self.settings.truncate_dim = before

    truncate_sentence_embeddings = truncate_embeddings  # the older name

    def fit(self, train_objectives: Iterable[tuple[Any, Any]], **options: Any) -> None:
        """sentence-transformers' legacy training call: (DataLoader of InputExample, loss) pairs, on sbert's engine.

        Takes fit's keywords (evaluator, epochs, warmup_steps, optimizer_params, output_path, ...: compat/fit.py).
        """
        from sbert.compat.fit import FitOptions, fit

        fit(self, train_objectives, FitOptions(**options))

    def old_fit(self, train_objectives: Iterable[tuple[Any, Any]], **options: Any) -> None:
        """The pre-4.0 name of `fit` (one training path here: the engine)."""
        self.fit(train_objectives, **options)


def _per_text(features: dict[str, Any], n: int, name: str | None) -> list[Any]:
    """One batch's outputs split by text: token vectors up to the last attended position, or each text's features."""
    if name == "token_embeddings":
        out = []
        for tokens, mask in zip(features["token_embeddings"], features["attention_mask"], strict=True):
            attended = torch.nonzero(mask).flatten()
            out.append(tokens[: int(attended[-1]) + 1 if len(attended) else 1])
        return out
    # Each text's features, and its input type as 6.2 records it ("modality": text is all a text model takes).
    return [{**{k: v[i] if isinstance(v, torch.Tensor) and v.ndim and v.shape[0] == n else v
                for k, v in features.items()}, "modality": "text"} for i in range(n)]  # fmt: skip


def _numpy(x: Any) -> np.ndarray:
    return float_tensor(x).detach().cpu().numpy()


def _as_returned(vectors: np.ndarray, precision: str, to_numpy: bool, to_tensor: bool, device: torch.device) -> Any:
    """sentence-transformers' return type: numpy, a tensor on the model's device, or a list of row tensors."""
    single = vectors.ndim == 1
    if precision != "float32":
        vectors = quantize_embeddings(vectors, precision)  # ranges from the vectors themselves, as the reference
        vectors = vectors[0] if single else vectors
    if to_tensor:
        return torch.from_numpy(np.ascontiguousarray(vectors)).to(device)
    if to_numpy:
        return vectors
    rows = torch.from_numpy(np.ascontiguousarray(vectors)).to(device)
    return rows if single else list(rows)
