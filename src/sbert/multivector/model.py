"""MultiVectorEncoder: late interaction (ColBERT) — a vector per token, scored by MaxSim.

The chain is the dense one's Transformer, then heads on the token embeddings: a Dense projection
(typically 768 -> 128, no bias), the MultiVectorMask and a token-level Normalize. Folders load
and save in sentence-transformers 6's layout or PyLate's (multivector/layout.py).
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self, cast

import numpy as np
import torch
from torch import nn

from sbert.device import backend_dtype, resolve_device
from sbert.encoding.prompted import PromptPlan
from sbert.errors import ModelFormatError, SbertError
from sbert.formats import layout
from sbert.formats.model_config import EncoderSettings, model_config, read_settings
from sbert.formats.model_dirs import resolve_model_dir
from sbert.modules import Dense, Module, MultiVectorMask, Normalize, Transformer
from sbert.modules.chain import save_chain
from sbert.modules.multimodal import MultimodalTransformer
from sbert.mteb_protocol import MtebMultiVector, mteb_entry
from sbert.multivector.engine import TOKENS, MultiVectorEngine
from sbert.multivector.layout import MultiVectorSettings, mask_config, transformer_config
from sbert.multivector.loading import load_multivector, save_pylate_files
from sbert.multivector.pages import is_page_model, page_rows
from sbert.multivector.tokens import SCORED, TokenRules, cut_tokens, served_width
from sbert.vectors.batching import check_sentences
from sbert.vectors.maxsim import TokenSets, maxsim_matrix, maxsim_pairs
from sbert.vectors.token_codes import check_token_format
from sbert.weights_state import TracksWeights

if TYPE_CHECKING:
    from sbert.backends.feature_graph import FeatureGraphEngine
    from sbert.multivector.packed import PackedMultiVector

log = logging.getLogger(__name__)
NATIVE_TYPE = "MultiVectorEncoder"
# Texts of two lengths the graph backends are traced on and checked with.
GRAPH_PROBES = ["a man is playing a guitar", "The quick brown fox jumps over the lazy dog, twice!", "x"]


class MultiVectorEncoder(MtebMultiVector, TracksWeights, nn.Sequential):
    """Transformer -> Dense (on tokens) -> Normalize: one unit vector per scored token, compared by MaxSim."""

    pair_scorer: ClassVar[bool] = False  # an embedder (the evaluators' contract)

    def __init__(
        self, modules: Sequence[Module], settings: MultiVectorSettings | None = None,
        device: str | torch.device | None = None,
    ) -> None:  # fmt: skip
        heads = [m for m in modules if not isinstance(m, MultiVectorMask)]
        super().__init__(*heads)
        if not isinstance(self[0], Transformer):
            raise ModelFormatError(f"a MultiVectorEncoder starts with a Transformer, not {type(self[0]).__name__}")
        self.mv_settings = settings or MultiVectorSettings()
        self.settings = EncoderSettings(similarity_fn_name="maxsim", model_type=NATIVE_TYPE)
        self.source_dir: Path | None = None
        # Whether training columns get their task's prompt ("[Q] " / "[D] "): sbert's rule, as encode_query adds
        # it. sentence-transformers 6.2's trainer routes columns by task without one; its drop-in class says so.
        self.train_task_prompts = True
        self._rules = TokenRules.resolve(self.mv_settings, self.transformer)
        self.to(resolve_device(device))
        self.eval()

    @classmethod
    def from_modules(
        cls, modules: Sequence[Module], settings: MultiVectorSettings | None = None,
        device: str | torch.device | None = None,
    ) -> Self:  # fmt: skip
        """A model of this class on built modules (a subclass with another constructor overrides this)."""
        return cls(modules, settings, device=device)

    @classmethod
    def load(cls, name_or_path: str | os.PathLike[str], device: str | torch.device | None = None,
             trust_remote_code: bool = False) -> Self:  # fmt: skip
        """Load a sentence-transformers 6 MultiVectorEncoder folder or a PyLate ColBERT folder."""
        root = resolve_model_dir(name_or_path)
        modules, mv = load_multivector(root, trust_remote_code)
        model = cls.from_modules(modules, mv, device=device)
        model.settings = read_settings(root, model_type=NATIVE_TYPE)
        model.source_dir = root
        return model

    @classmethod
    def from_transformer(
        cls, name_or_path: str | os.PathLike[str], dim: int = 128, settings: MultiVectorSettings | None = None,
        device: str | torch.device | None = None, prompts: dict[str, str] | None = None,
    ) -> Self:  # fmt: skip
        """A new ColBERT on a Hugging Face encoder: a `dim`-wide projection (no bias) of every token, normalized."""
        transformer = Transformer.from_pretrained(resolve_model_dir(name_or_path))
        dense = Dense(transformer.embedding_dimension, dim, bias=False, module_input_name=TOKENS,
                      module_output_name=TOKENS)  # fmt: skip
        model = cls.from_modules([transformer, dense, Normalize(TOKENS)], settings, device=device)
        model.settings.prompts = dict(prompts or {})
        return model

    @property
    def transformer(self) -> Transformer:
        """The encoder at the head of the chain."""
        first = self[0]
        assert isinstance(first, Transformer)
        return first

    def chain(self) -> list[Module]:
        """The modules in order: Transformer, token heads."""
        return [m for m in self.children() if isinstance(m, Module)]

    # Token matrices out: trained by token-level objectives only (losses/base.py).
    token_level = True
    router = None  # the contract training asks; a multi-vector chain has no Router

    @property
    def input_module(self) -> Transformer:
        """What turns texts into token ids."""
        return self.transformer

    @property
    def chain_dimension(self) -> int:
        """Width of every token vector the chain computes (the training contract's name for the output width)."""
        return self.head_dimension

    def column_tokens(self, column: int) -> Callable[[Sequence[str]], tuple[list[list[int]], list[int]]]:
        """How training tokenizes text column `column`: column 0 as queries, the others as documents.

        Each gets its task's prompt (unless `train_task_prompts` is off) or PyLate prefix, length and
        expansion, exactly as encode_query / encode_document do.
        """
        self._check_text_rows("training")
        task = _column_task(column)
        prompt = self._prompt(task, None, None) if self.train_task_prompts else ""
        return partial(self._rules.token_ids, self.transformer, task=task, prompt=prompt)

    def column_pad(self, column: int) -> Callable[[Sequence[Sequence[int]]], dict[str, Any]]:
        """How training pads column `column`: with the query or document rules, marking the scored positions."""
        return partial(self._rules.pad, self.transformer, task=_column_task(column))

    def prompt_plan(self, prompt_name: str | None = None, task: str | None = None) -> PromptPlan:
        """No extra text: training columns get their task's prompt from `column_tokens`."""
        if prompt_name is not None:
            raise ValueError("a multi-vector model's training columns take their task's prompt: drop `prompts`")
        return PromptPlan()

    @property
    def device(self) -> torch.device:
        """Where the weights live."""
        return next(self.parameters()).device

    @property
    def head_dimension(self) -> int:
        """Width of the token vectors the chain computes (before any `truncate_dim`)."""
        dims = [m.out_features for m in self if isinstance(m, Dense)]
        return dims[-1] if dims else self.transformer.embedding_dimension

    @property
    def embedding_dimension(self) -> int:
        """Width of every token vector served: the head's, or the model's `truncate_dim` where it sets one."""
        return served_width(self.head_dimension, self.settings.truncate_dim)

    def _served(self, mats: list[np.ndarray], truncate_dim: int | None = None) -> list[np.ndarray]:
        """The token matrices cut to `truncate_dim` (else the model's) and made unit length again, as 6.3 does."""
        cut = truncate_dim if truncate_dim is not None else self.settings.truncate_dim
        return mats if cut is None else cut_tokens(mats, served_width(self.head_dimension, cut))

    @property
    def max_seq_length(self) -> int | None:
        """The longest document in tokens (queries have their own limit: the query or expansion length)."""
        return self._rules.limit("document", self.transformer)

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        raise ValueError("a multi-vector model's limits are its query_length and document_length (saved in its folder)")

    @property
    def similarity_fn_name(self) -> str:
        """maxsim, or meanmaxsim (MaxSim over the query's token count)."""
        return self.settings.similarity_fn_name

    def token_rows(
        self, texts: Sequence[str], task: str | None = None, prompt_name: str | None = None
    ) -> tuple[list[list[int]], list[int]]:
        """Token ids per text as encode(task=, prompt_name=) feeds them (prompt and prefix in, cut), and the cut."""
        self._check_text_rows("token rows (the server's batcher, late interaction on token ids)")
        return self._rules.token_ids(self.transformer, texts, task, self._prompt(task, prompt_name, None))

    def encode_known(self, items: Sequence[Any], kind: str) -> list[np.ndarray]:
        """A page-image model's matrices for `items` all of `kind` ("text" or "image"), as `encode` gives them.

        Nothing is inferred from the items: a server passes a client's texts here, never to be opened as paths.
        """
        model = cast(MultimodalTransformer, self.transformer)
        return self._served(page_rows(model, items, None, kind)[0], None)

    def _check_text_rows(self, what: str) -> None:
        """One line for a page-image model, whose inputs only its own processor renders (multivector/pages.py)."""
        if is_page_model(self.transformer):
            raise SbertError(f"{type(self.transformer.auto_model).__name__} renders its queries and pages with its "
                             f"own processor: encode, encode_query and encode_document take them; {what} do not "
                             "(not yet supported for page-image models)")  # fmt: skip

    def token_lengths(
        self, texts: Sequence[str], task: str | None = None, prompt_name: str | None = None
    ) -> tuple[list[int], list[int]]:
        """Tokens per text as the encoder sees them for `task` (prompt and prefix counted), and the indices cut."""
        rows, cut = self.token_rows(texts, task, prompt_name)
        return [len(r) for r in rows], cut

    def encode_token_rows(
        self, rows: Sequence[Sequence[int]], task: str | None = None, prompt_name: str | None = None,
        backend: str = "torch", precision: str = "auto",
    ) -> list[np.ndarray]:  # fmt: skip
        """Token matrices of rows from `token_rows(texts, task, prompt_name)`, as `encode(texts, ...)` gives them.

        The task's rules (query expansion, the document skiplist) apply here as in `encode`; the prompt is in the rows.
        """
        return self._served(self.engine(precision, backend).run(rows, task, show_progress=False))

    @mteb_entry
    def encode(
        self, sentences: str | Iterable[str], task: str | None = None, prompt_name: str | None = None,
        prompt: str | None = None, batch_size: int | None = None, batch_tokens: int | None = None,
        precision: str = "auto", output: str = "list", show_progress: bool | None = None, backend: str = "torch",
        token_format: str = "float32", truncate_dim: int | None = None,
    ) -> Any:  # fmt: skip
        """Token vectors: a float32 (n_tokens, dim) array per text (one array for a string), or packed.

        `task` "query" applies query length and expansion, "document" the document rules; None cuts at
        max_seq_length with no prefix token (the skiplist still applies), as sentence-transformers does.
        `precision` "auto" (fp32 on a CPU, half on CUDA), "fp32", "bf16" or "fp16", as for dense encoders.
        `backend` "torch", or a graph runtime: "onnx", "onnx-int8", "openvino", "openvino-int8" (CPU, fp32 graph
        or int8 weights; exported once beside the model, checked against torch).
        `output` "packed" returns one `TokenSets` (all rows end to end, and offsets) instead of a list; with
        `token_format` "float16", "int8" (a scale per token) or "binary" (a bit a dimension) its tokens are
        compact, and `similarity` scores them as they are (vectors/token_codes.py says how each decodes).
        `show_progress`: a bar (None: only for 2,048 texts or more, as dense encoders do).
        `truncate_dim`: each token vector cut to that many leading dimensions and made unit length again
        (None: the model's own `truncate_dim`, saved in its folder, else the whole vector).
        """
        if check_token_format(token_format) != "float32" and output != "packed":
            raise ValueError(f"token_format={token_format!r} needs output='packed' (a list holds float32 matrices)")
        if is_page_model(self.transformer):  # ColPali-class: queries and page images through its processor
            mats, single = page_rows(self.page_module(precision), sentences, batch_size)
        else:
            texts, single = check_sentences(sentences)
            ids, _ = self._rules.token_ids(self.transformer, texts, task, self._prompt(task, prompt_name, prompt))
            mats = self.engine(precision, backend).run(ids, task, batch_size, batch_tokens, show_progress)
        mats = self._served(mats, truncate_dim)
        if output == "packed":
            packed = TokenSets.pack(mats, mats[0].shape[1] if mats else self.embedding_dimension)
            return packed if token_format == "float32" else packed.compact(token_format)
        if output != "list":
            raise ValueError(f"output must be 'list' or 'packed', got {output!r}")
        return mats[0] if single else mats

    def encode_query(self, sentences: str | Iterable[str], **options: Any) -> Any:
        """Encode queries: query length, expansion and the query prompt or prefix."""
        return self.encode(sentences, task="query", **options)

    def encode_document(self, sentences: str | Iterable[str], **options: Any) -> Any:
        """Encode documents: document length, skiplist and the document prompt or prefix."""
        return self.encode(sentences, task="document", **options)

    def similarity(self, queries: Any, documents: Any) -> np.ndarray:
        """float32 (n_queries, n_documents) MaxSim (or MeanMaxSim) scores."""
        return maxsim_matrix(queries, documents, mean=self.similarity_fn_name == "meanmaxsim")

    def similarity_pairwise(self, queries: Any, documents: Any) -> np.ndarray:
        """float32 (n,): the score of query i with document i."""
        return maxsim_pairs(queries, documents, mean=self.similarity_fn_name == "meanmaxsim")

    def page_module(self, precision: str = "auto") -> MultimodalTransformer:
        """A page-image model's input module in `precision`'s dtype, for its queries and pages.

        "auto": as held, so its matrices are the reference's; "bf16" / "fp16": a copy cast once per weights
        state (the CPU's bf16 path for the page tower, as the engines cast a text model).
        """
        module = cast(MultimodalTransformer, self.transformer)
        held = next(module.parameters()).dtype
        dtype = held if precision == "auto" else backend_dtype("torch", precision, self.device)
        if dtype == held:
            return module
        return self.cached_engine(("pages", self.device.type, dtype), lambda: copy.deepcopy(module).to(dtype))

    def engine(self, precision: str = "auto", backend: str = "torch", packed: bool | None = None) -> MultiVectorEngine:
        """The engine for these weights on `backend` in `precision` (rebuilt when the weights change).

        `packed` (torch only; default: on CUDA) runs padding-free batches where it can (multivector/packed.py).
        """
        dtype = backend_dtype(backend, precision, self.device, self.transformer.embedding_dimension)  # the dense rule
        wants_packed = backend == "torch" and (packed if packed is not None else self.device.type == "cuda")

        def build() -> MultiVectorEngine:
            graph = None if backend == "torch" else self._graph(backend, dtype)
            return MultiVectorEngine(self.chain(), self._rules, self.device, dtype, graph,
                                     self._packed(dtype) if wants_packed else None)  # fmt: skip

        return self.cached_engine((backend, self.device.type, dtype, wants_packed), build)

    def _packed(self, dtype: torch.dtype) -> PackedMultiVector | None:
        """The packed engine for this chain, or None (logged) where the model or device cannot run one."""
        from sbert.multivector.packed import PackedMultiVector

        try:
            return PackedMultiVector(self.chain(), self._rules, self.device, dtype)
        except ValueError as why:
            log.info("multi-vector packed batches off (%s): running padded batches", why)
            return None

    def _graph(self, backend: str, dtype: torch.dtype) -> FeatureGraphEngine:
        """The chain's token vectors exported for a graph runtime (fp32 graph; int8 weights for the -int8 runtimes)."""
        from sbert.backends.base import Chain
        from sbert.backends.cache import model_digest
        from sbert.backends.feature_graph import open_feature_graph

        digest = model_digest(self)
        chain = Chain(tuple(self.chain()), self.head_dimension, self.device, lambda: digest, self.source_dir)
        probe_ids, _ = self._rules.token_ids(self.transformer, GRAPH_PROBES, "document")
        probes = self._rules.pad(self.transformer, probe_ids, "document")
        probes.pop(SCORED)
        return open_feature_graph(chain, backend, TOKENS, probes, dtype)

    def training_chain(self) -> MultiVectorEncoder:
        """What sbert's training engine trains for this model: the model itself."""
        return self

    def save(self, path: str | os.PathLike[str], extras: Callable[[Path], None] | None = None) -> None:
        """Write the folder atomically in the layout it came in: sentence-transformers 6's, or PyLate's.

        `extras` may add files (a model card) inside the same atomic write.
        """
        mv = self.mv_settings
        with layout.atomic_directory(path) as tmp:
            if extras is not None:
                extras(tmp)
            if mv.flavor == "pylate":  # PyLate's chain is [Transformer, Dense]; it normalizes inside encode
                dense = self[1]
                if len(self) != 3 or not isinstance(dense, Dense):
                    raise ModelFormatError("PyLate's layout holds a Transformer and one Dense")
                save_chain(tmp, [self.transformer, dense])
                save_pylate_files(tmp, dense, mv, self.settings)
                return
            self.transformer.extra_config = transformer_config(mv)
            modules = [*self.chain(), MultiVectorMask(mask_config(mv))]
            if isinstance(modules[-2], Normalize):  # sentence-transformers 6 orders Dense, Mask, Normalize
                modules[-2], modules[-1] = modules[-1], modules[-2]
            save_chain(tmp, modules)
            layout.write_json(
                tmp / layout.MODEL_CONFIG_FILE, model_config(replace(self.settings, model_type=NATIVE_TYPE))
            )

    def _prompt(self, task: str | None, prompt_name: str | None, prompt: str | None) -> str:
        if self.mv_settings.flavor == "pylate" and prompt_name is None and prompt is None:
            return ""  # PyLate uses saved prompts only when a prompt_name asks for one
        return self.settings.resolve_prompt(task=task, prompt_name=prompt_name, prompt=prompt)


def _column_task(column: int) -> str:
    """Training's column roles: the first column holds queries (anchors), the others documents."""
    return "query" if column == 0 else "document"
