"""SentenceEncoder: an ordered chain of modules that turns sentences into vectors."""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Self, cast, overload

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from sbert import layout
from sbert import long_text as long_text_policy
from sbert.aliases import DEFAULT_MODEL
from sbert.backends import BACKENDS, BackendError, open_backend
from sbert.batching import check_sentences, fixed_batches, length_order, token_batches
from sbert.errors import TruncationError
from sbert.loading import load_modules, resolve_model_dir
from sbert.long_text import LongText
from sbert.modules import Features, Module, Normalize, Transformer, build_head
from sbert.modules.normalize import l2_normalize

if TYPE_CHECKING:
    from sbert.backends.onnx_runtime import OnnxBackend

log = logging.getLogger(__name__)
OnTruncation = Literal["warn", "error", "ignore"]
# Progress bars appear by default only for inputs long enough to take a while.
_PROGRESS_MIN_SENTENCES = 2048
# Padded tokens per batch when neither batch_size nor batch_tokens is given, measured on 2 cores
# with one batch per core at a time (benchmarks/encode_speed.py --sweep; docs/speed.md).
DEFAULT_BATCH_TOKENS = {"torch": 512, "onnx": 512, "onnx-int8": 512}
_MAX_BATCH_ROWS = 512


class SentenceEncoder(nn.Sequential):
    """A Transformer followed by pooling (and optional heads) producing one vector per sentence."""

    def __init__(self, modules: Sequence[Module], device: str | torch.device | None = None) -> None:
        super().__init__(*modules)
        if not modules or not isinstance(modules[0], Transformer):
            raise ValueError("the first module of a SentenceEncoder must be a Transformer")
        self.to(default_device() if device is None else device)
        self.eval()
        # The folder the model was loaded from (ONNX graphs are cached beside it), if any.
        self.source_dir: Path | None = None
        self._backends: dict[str, tuple[tuple[int, ...], OnnxBackend]] = {}
        self._digest: tuple[tuple[tuple[int, ...], str], str] | None = None

    @classmethod
    def load(
        cls,
        name_or_path: str | os.PathLike[str] = DEFAULT_MODEL,
        device: str | torch.device | None = None,
        trust_remote_code: bool = False,
    ) -> Self:
        """Load an alias, a local sentence-transformers or Hugging Face directory, or a Hub id."""
        root = resolve_model_dir(name_or_path)
        model = cls(load_modules(root, trust_remote_code=trust_remote_code), device=device)
        model.source_dir = root
        return model

    @classmethod
    def from_transformer(
        cls,
        name_or_path: str | os.PathLike[str],
        pooling: str | list[str] = "mean",
        normalize: bool = False,
        max_seq_length: int | None = None,
        device: str | torch.device | None = None,
    ) -> Self:
        """Build a new encoder (alias, local dir or Hub id of a Hugging Face encoder) plus a head.

        `pooling`: mean / max / cls (or a list, concatenated), `cnn` (CNN-SBERT) or `ngram-cnn` (IS-BERT).
        """
        transformer = Transformer.from_pretrained(resolve_model_dir(name_or_path), max_seq_length=max_seq_length)
        modules: list[Module] = [transformer, *build_head(pooling, transformer.embedding_dimension)]
        if normalize:
            modules.append(Normalize())
        return cls(modules, device=device)

    @property
    def transformer(self) -> Transformer:
        """The encoder at the head of the chain."""
        first = self[0]
        assert isinstance(first, Transformer)
        return first

    @property
    def device(self) -> torch.device:
        """Where the parameters live."""
        return next(self.parameters()).device

    @property
    def max_seq_length(self) -> int:
        """Token limit per input (inputs are truncated beyond it)."""
        return self.transformer.max_seq_length

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        self.transformer.max_seq_length = value

    @property
    def embedding_dimension(self) -> int:
        """Size of the sentence vector."""
        dim = self.transformer.embedding_dimension
        for module in self.chain():
            # Pooling, CNNHead and NGramCNN change the width; Normalize keeps it.
            dim = getattr(module, "output_dimension", dim)
        return dim

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
        return {k: v.to(self.device) for k, v in self.transformer.tokenize(texts).items()}

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
    ) -> torch.Tensor: ...

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
    ) -> np.ndarray | torch.Tensor:
        """Embed sentences: float32 (n, dim) for a list, (dim,) for a single string.

        Inputs are sorted by token length and each batch is padded only to its longest
        member; rows come back in input order. `backend` picks torch, onnx (fp32) or
        onnx-int8. Batches hold up to `batch_tokens` padded tokens (default 512), capped at
        `batch_size` rows when both are given; `batch_size` alone gives fixed-size batches.
        `long_text="chunk"` embeds inputs beyond max_seq_length as the mean of overlapping windows.
        """
        texts, single = check_sentences(sentences)
        for name, value in (("batch_size", batch_size), ("batch_tokens", batch_tokens)):
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
        if device is not None:
            self.to(device)
        run, workers = self._runner(backend)
        ids, owners = self._token_rows(texts, on_truncation, long_text)
        lengths = [len(row) for row in ids]
        order = length_order(lengths)
        if batch_size is not None and batch_tokens is None:
            batches = fixed_batches(order, batch_size)
        else:
            budget = batch_tokens or DEFAULT_BATCH_TOKENS[backend]
            batches = token_batches(order, lengths, budget, batch_size or _MAX_BATCH_ROWS)
        # A NumPy buffer: filling it runs no torch op, whose OpenMP threads would otherwise
        # spin against ONNX Runtime's (measured: 13% of the int8 backend's time).
        buffer = np.empty((len(ids), self.embedding_dimension), dtype=np.float32)
        show = len(texts) >= _PROGRESS_MIN_SENTENCES if show_progress is None else show_progress
        was_training = self.training
        self.eval()
        try:
            with torch.inference_mode(), tqdm(total=len(ids), unit="sent", disable=not show) as bar:
                for batch, emb in self._run_batches(run, workers, ids, batches):
                    buffer[batch] = emb.numpy()
                    bar.update(len(batch))
        finally:
            self.train(was_training)
        out = long_text_policy.merge(torch.from_numpy(buffer), owners, len(texts), renormalize=self._ends_normalized())
        if normalize:
            out = l2_normalize(out)
        result = out[0] if single else out
        return result.numpy() if convert_to == "numpy" else result

    def _token_rows(
        self, texts: list[str], on_truncation: OnTruncation, long_text: LongText
    ) -> tuple[list[list[int]], list[int]]:
        """Token ids per row and the input each row belongs to (long inputs may span rows)."""
        ids, cut = self.transformer.token_ids(texts)
        if long_text not in long_text_policy.LONG_TEXT_POLICIES:
            raise ValueError(f"long_text must be one of {long_text_policy.LONG_TEXT_POLICIES}, got {long_text!r}")
        if long_text == "truncate" or not cut:
            report_truncation(cut, len(texts), self.max_seq_length, on_truncation)
            return ids, list(range(len(ids)))
        rows, owners = long_text_policy.expand(self.transformer, texts, ids, cut)
        log.info("%d of %d inputs exceeded %d tokens: split into windows", len(cut), len(texts), self.max_seq_length)
        return rows, owners

    def _ends_normalized(self) -> bool:
        return any(isinstance(m, Normalize) for m in self.chain())

    def _runner(self, backend: str) -> tuple[Callable[[Features], torch.Tensor], int]:
        """The function mapping padded features to float32 CPU embeddings, and its parallel batches.

        On CPU, one single-threaded batch per core at a time beat one batch spread over all
        cores (small matrices lose much of a multi-threaded op to synchronisation): torch
        +12%, ONNX Runtime +15% on 2 cores (docs/speed.md).
        """
        workers = torch.get_num_threads() if self.device.type == "cpu" else 1
        if backend == "torch":
            return self._embed_torch, workers
        onnx = self.backend(backend)
        return onnx.embed, min(workers, onnx.workers)

    def _run_batches(
        self, run: Callable[[Features], torch.Tensor], workers: int, ids: list[list[int]], batches: list[list[int]]
    ) -> Iterator[tuple[list[int], torch.Tensor]]:
        """(batch, embeddings) in batch order, `workers` batches at a time from threads."""

        def job(batch: list[int]) -> tuple[list[int], torch.Tensor]:
            with torch.inference_mode():
                return batch, run(self.transformer.pad([ids[i] for i in batch]))

        if workers <= 1 or len(batches) <= 1:
            yield from map(job, batches)
            return
        # torch's thread count is per thread: the workers' setting leaves the caller's alone.
        with ThreadPoolExecutor(workers, initializer=torch.set_num_threads, initargs=(1,)) as pool:
            yield from pool.map(job, batches)

    def backend(self, name: str) -> OnnxBackend:
        """The ONNX backend `name`, exported or loaded from the cache and checked against torch."""
        if name not in BACKENDS or name == "torch":
            raise BackendError(f"unknown ONNX backend {name!r}; known: {', '.join(BACKENDS[1:])}")
        version = self._weights_version()
        cached = self._backends.get(name)
        if cached is None or cached[0] != version:
            self._backends[name] = (version, open_backend(self, name))
        return self._backends[name][1]

    def weights_digest(self) -> str:
        """sha256 of every weight and module configuration, computed once per weights state.

        The ONNX cache, shard folders and index folders all record it; hashing a large model
        takes seconds, so it is redone only after the weights or a module's config change.
        """
        from sbert.backends.cache import model_digest

        key = (self._weights_version(), json.dumps([m.get_config() for m in self.chain()], sort_keys=True))
        if self._digest is None or self._digest[0] != key:
            self._digest = (key, model_digest(self))
        return self._digest[1]

    def _weights_version(self) -> tuple[int, ...]:
        # Parameter version counters move on every in-place update (optimizer steps,
        # load_state_dict): a cheap test that weights are unchanged since the last look.
        return tuple(p._version for p in self.parameters())

    def _embed_torch(self, features: Features) -> torch.Tensor:
        emb = self({k: v.to(self.device) for k, v in features.items()})["sentence_embedding"]
        return emb.float().cpu()

    def save(self, path: str | os.PathLike[str], extras: Callable[[Path], None] | None = None) -> None:
        """Write the sentence-transformers layout atomically: a kill mid-save keeps the old copy.

        `extras` may add files (a model card, trained heads) inside the same atomic write.
        """
        entries = []
        with layout.atomic_directory(path) as tmp:
            for idx, module in enumerate(self.chain()):
                # The first (Transformer) module lives in the root, as sentence-transformers expects.
                folder = "" if idx == 0 else f"{idx}_{type(module).__name__}"
                module.save(tmp / folder)
                entries.append(layout.ModuleEntry(idx, str(idx), folder, module.module_type))
            layout.write_modules(tmp, entries)
            layout.write_json(tmp / layout.MODEL_CONFIG_FILE, model_config())
            if extras is not None:
                extras(tmp)


def report_truncation(cut: list[int], total: int, limit: int, policy: OnTruncation) -> None:
    """Warn once per call (or raise) when inputs were longer than the model's token limit."""
    if not cut or policy == "ignore":
        return
    message = (
        f"{len(cut)} of {total} inputs exceeded max_seq_length={limit} tokens and were truncated "
        f"(first at index {cut[0]})"
    )
    if policy == "error":
        raise TruncationError(message.replace("and were truncated", "(truncation refused)"))
    warnings.warn(message, stacklevel=3)


def model_config() -> dict[str, object]:
    """config_sentence_transformers.json: versions and the similarity function."""
    import transformers

    from sbert import __version__

    return {
        "__version__": {
            "sbert": __version__,
            "transformers": transformers.__version__,
            "pytorch": torch.__version__,
        },
        "similarity_fn_name": "cosine",
    }


def default_device() -> torch.device:
    """CUDA when present, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
