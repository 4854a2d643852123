"""SparseEncoder: texts to sparse vocabulary-weight vectors (SPLADE), in sentence-transformers' layout."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

import numpy as np
import scipy.sparse
import torch
from torch import nn
from tqdm.auto import tqdm

from sbert.dense.model import SentenceEncoder
from sbert.device import resolve_device
from sbert.errors import ModelFormatError, SbertError
from sbert.formats import layout
from sbert.formats.model_config import EncoderSettings, model_config, read_settings
from sbert.formats.model_dirs import resolve_model_dir
from sbert.mteb_protocol import MtebEncoder, mteb_entry
from sbert.names import SPARSE_BACKEND_NAMES
from sbert.sparse.csr import SparseAutoEncoder
from sbert.sparse.engine import check_k, csr_to_torch, splade_batch, to_csr, top_k, top_k_csr
from sbert.sparse.loading import load_sparse, save_csr, save_sparse
from sbert.sparse.mlm import MLMTransformer
from sbert.sparse.packed import PACKED_TOKENS, PackedSplade
from sbert.sparse.splade import SpladePooling
from sbert.sparse.static_query import SparseStaticEmbedding
from sbert.vectors.batching import packed_batches
from sbert.weights_state import TracksWeights

if TYPE_CHECKING:
    from sbert.backends.feature_graph import FeatureGraphEngine

log = logging.getLogger(__name__)
GRAPH_STEM = "splade"  # the cached graph's file name in the model's onnx/ folder (splade.onnx, splade-int8.onnx)
BACKENDS = SPARSE_BACKEND_NAMES


class SparseEncoder(MtebEncoder, TracksWeights, nn.Module):
    """SPLADE: an MLM backbone and SPLADE pooling, one weight per vocabulary token, most of them zero.

    With `query` (inference-free SPLADE), queries skip the transformer: each of their tokens gets a fixed weight.
    """

    def __init__(
        self, mlm: MLMTransformer | None = None, pooling: SpladePooling | None = None,
        query: SparseStaticEmbedding | None = None, device: str | torch.device | None = None, *,
        dense: SentenceEncoder | None = None, sae: SparseAutoEncoder | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        if (mlm is None or pooling is None) == (dense is None or sae is None):
            raise ModelFormatError("a SparseEncoder is SPLADE (mlm and pooling) or CSR (a dense model and its sae)")
        self.mlm, self.pooling, self.query, self.dense, self.sae = mlm, pooling, query, dense, sae
        if query is not None and mlm is not None and query.weight.shape[0] != mlm.vocab_size:
            raise ModelFormatError(f"query weights cover {query.weight.shape[0]} tokens; the MLM head {mlm.vocab_size}")
        # dot, as sentence-transformers' SparseEncoder scores by default
        self.settings = EncoderSettings(similarity_fn_name="dot", model_type="SparseEncoder")
        self.max_active_dims: int | None = None
        self.source_dir: Path | None = None  # where ONNX graphs are cached (the folder the model came from)
        self.to(resolve_device(device))
        self.eval()

    @classmethod
    def load(cls, name_or_path: str | os.PathLike[str], device: str | torch.device | None = None,
             trust_remote_code: bool = False, max_active_dims: int | None = None) -> Self:  # fmt: skip
        """Load a SPLADE model: a sentence-transformers SparseEncoder folder, or a plain MLM (max pooling, relu)."""
        root = resolve_model_dir(name_or_path)
        model = cls(**load_sparse(root, trust_remote_code), device=device)
        model.settings = read_settings(root, model_type="SparseEncoder")
        model.source_dir = root
        if model.dense is not None:
            model.dense.settings = model.settings
        model.max_active_dims = check_k(max_active_dims) or model.settings.max_active_dims
        return model

    @property
    def dimension(self) -> int:
        """The width of every sparse vector: the vocabulary (SPLADE) or the autoencoder's hidden size (CSR)."""
        return self.sae.hidden_dim if self.sae is not None else self._splade()[0].vocab_size

    def graph(self, runtime: str = "onnx") -> FeatureGraphEngine:
        """The shared graph engine for these weights on `runtime`: exported or read from the cache, then checked.

        The graph is the chain [MLM, SpladePooling] ending at the pooled rows (B, V), so the logits never leave it.
        """
        from sbert.backends.base import Chain, probe_features
        from sbert.backends.cache import model_digest
        from sbert.backends.feature_graph import open_feature_graph

        def build() -> FeatureGraphEngine:
            mlm, pooling = self._splade()
            digest = model_digest(nn.Sequential(mlm, pooling))
            chain = Chain((mlm, pooling), mlm.vocab_size, self.device, lambda: digest, self.source_dir)
            return open_feature_graph(chain, runtime, "sentence_embedding", probe_features(mlm), per_token=False,
                                      stem=GRAPH_STEM)  # fmt: skip

        return self.cached_engine(("graph", runtime), build)

    def training_chain(self) -> SentenceEncoder:
        """What sbert's training engine trains for this model: its SPLADE chain (as_sentence_encoder)."""
        return self.as_sentence_encoder()

    def as_sentence_encoder(self) -> SentenceEncoder:
        """The SPLADE (or CSR) modules as a SentenceEncoder chain sharing their weights: what the engine trains.

        It saves in the same SPLADE layout (a fill-mask Transformer, then SpladePooling), which
        SparseEncoder.load and sentence-transformers read.
        """
        if self.dense is not None and self.sae is not None:  # CSR: the dense chain then the autoencoder (CSRLoss)
            model = SentenceEncoder([*self.dense.chain(), self.sae], device=self.device)
            model.settings = replace(self.settings, model_type="SparseEncoder")
            model.source_dir = self.source_dir
            return model
        mlm, pooling = self._splade()
        if self.query is not None:
            raise SbertError("training inference-free SPLADE (a Router) is not supported yet: train the SPLADE side")
        pooling.embedding_dimension = mlm.vocab_size
        model = SentenceEncoder([mlm, pooling], device=self.device)
        # Saved as a SparseEncoder (else sentence-transformers would convert it, adding an autoencoder), scored by dot.
        model.settings = replace(self.settings, model_type="SparseEncoder", similarity_fn_name="dot")
        model.source_dir = self.source_dir
        return model

    def token_lengths(
        self, texts: Sequence[str], task: str | None = None, prompt_name: str | None = None
    ) -> tuple[list[int], list[int]]:
        """Tokens per text as the encoder sees them, and the indices cut.

        The prompt `encode` would put in front (by `task` / `prompt_name`) is counted, and the rows are truncated.
        """
        module = self._document_input()
        text = self.settings.resolve_prompt(task=task, prompt_name=prompt_name)
        ids, cut = module.token_ids([text + t for t in texts] if text else list(texts))
        return [len(row) for row in ids], cut

    @property
    def embedding_dimension(self) -> int:
        """The width of every sparse vector (the encoder contract's name for `dimension`)."""
        return self.dimension

    @property
    def max_seq_length(self) -> int:
        """The document encoder's token limit."""
        return int(self._document_input().max_seq_length)

    def _document_input(self) -> Any:
        module = self.mlm if self.mlm is not None else self.dense.input_module if self.dense is not None else None
        assert module is not None
        return module

    def _splade(self) -> tuple[MLMTransformer, SpladePooling]:
        assert self.mlm is not None and self.pooling is not None
        return self.mlm, self.pooling

    @property
    def device(self) -> torch.device:
        """Where the weights live."""
        return next(self.parameters()).device

    @mteb_entry
    def encode(
        self,
        sentences: str | Sequence[str],
        batch_size: int = 32,
        prompt_name: str | None = None,
        prompt: str | None = None,
        max_active_dims: int | None = None,
        convert_to: Literal["csr", "torch"] = "csr",
        show_progress: bool = False,
        task: str | None = None,
        backend: Literal["torch", "onnx", "onnx-int8", "openvino", "openvino-int8"] = "torch",
    ) -> Any:
        """Sparse vectors, one row per sentence, in input order: a scipy CSR matrix (or a torch sparse COO tensor).

        `max_active_dims` keeps each row's k largest weights (default: the model's setting, else all).
        `backend="onnx"` / `"openvino"` (and their `-int8` forms) run SPLADE's MLM and pooling as one graph in that
        runtime, on the shared graph engine (CSR: its dense model's backend of that name).
        """
        single = isinstance(sentences, str)
        texts = [sentences] if isinstance(sentences, str) else list(sentences)
        if batch_size < 1:
            raise SbertError(f"batch_size={batch_size}: must be >= 1")
        if convert_to not in ("csr", "torch"):
            raise SbertError(f"convert_to={convert_to!r}: use csr or torch")
        if backend not in BACKENDS:
            raise SbertError(f"backend={backend!r}: a SparseEncoder runs on {', '.join(BACKENDS)}")
        k = check_k(max_active_dims) or self.max_active_dims
        text = self.settings.resolve_prompt(task=task, prompt_name=prompt_name, prompt=prompt)
        prompted = [text + t for t in texts] if text else texts
        if task == "query" and self.query is not None:  # inference-free: a table lookup, no transformer
            result = top_k_csr(self.query.encode_csr(prompted), k)
            return _convert(result, convert_to, single)
        if self.dense is not None and self.sae is not None:  # CSR: the dense vectors, then their sparse codes
            # The prompt chosen here, given as the dense model's explicit prompt: its own default must not add
            # a second one, and its Pooling's include_prompt still applies.
            vectors = self.dense.encode(texts, prompt=text, batch_size=batch_size, show_progress=show_progress,
                                        backend=backend)  # fmt: skip
            with torch.inference_mode():
                codes = self.sae.codes(torch.from_numpy(vectors).to(self.device), k)
            return _convert(to_csr(codes), convert_to, single)
        return _convert(self._splade_rows(prompted, batch_size, k, backend, show_progress), convert_to, single)

    def _splade_rows(
        self, texts: list[str], batch_size: int, k: int | None, backend: str, show_progress: bool,
        packed: bool | None = None,
    ) -> scipy.sparse.csr_matrix:  # fmt: skip
        """SPLADE vectors of `texts` in input order, batched by length (similar lengths share a batch).

        `packed` (default: on CUDA) runs padding-free batches cut by real tokens (sparse/packed.py).
        """
        mlm, pooling = self._splade()
        graph = self.graph(backend) if backend != "torch" else None
        ids, _ = mlm.token_ids(texts)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        wants_packed = packed if packed is not None else self.device.type == "cuda"
        engine = self._packed_engine() if graph is None and wants_packed else None
        if engine is not None:
            batches = packed_batches(order, [len(row) for row in ids], PACKED_TOKENS, max(batch_size, 512))
        else:
            batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
        parts = []
        for batch in tqdm(batches, disable=not show_progress, unit="batch"):
            rows = [ids[i] for i in batch]
            if engine is not None:
                pooled = engine.embed(rows).float()
            else:
                features = {name: value.to(self.device) for name, value in mlm.pad(rows).items()}
                if graph is not None:
                    pooled = torch.from_numpy(graph.embed(features))
                else:
                    pooled = splade_batch(mlm, pooling, features)
            parts.append(to_csr(top_k(pooled, k)))
        done = [i for batch in batches for i in batch]
        stacked = scipy.sparse.vstack(parts, format="csr") if parts else scipy.sparse.csr_matrix((0, self.dimension))
        inverse = np.empty(len(done), dtype=np.int64)
        inverse[done] = np.arange(len(done))
        return stacked[inverse]

    def _packed_engine(self) -> PackedSplade | None:
        """The packed engine for these weights on this device (fp32: the vectors equal the padded path's), or None."""

        def build() -> PackedSplade | None:
            mlm, pooling = self._splade()
            try:
                return PackedSplade(mlm, pooling, self.device, torch.float32)
            except ValueError as why:  # this model or device cannot run packed: the padded engine runs instead
                log.info("SPLADE packed batches off (%s): running padded batches", why)
                return None

        return self.cached_engine(("packed", str(self.device)), build)

    def encode_query(self, sentences: str | Sequence[str], **options: Any) -> Any:
        """`encode` with the model's query prompt (its `query` prompt, if it has one)."""
        return self.encode(sentences, task="query", **options)

    def encode_document(self, sentences: str | Sequence[str], **options: Any) -> Any:
        """`encode` with the model's document prompt."""
        return self.encode(sentences, task="document", **options)

    def decode(self, vectors: scipy.sparse.spmatrix, top: int | None = None) -> list[list[tuple[str, float]]]:
        """Each row's (token, weight) pairs, heaviest first (the `top` heaviest for an int)."""
        rows = scipy.sparse.csr_matrix(vectors)
        tokenizer = self.mlm.tokenizer if self.mlm is not None else None  # CSR dimensions have no tokens
        out = []
        for i in range(rows.shape[0]):
            row = rows.getrow(i)
            pairs = sorted(zip(row.indices.tolist(), row.data.tolist(), strict=True), key=lambda p: -p[1])[:top]
            name = (lambda j: str(tokenizer.convert_ids_to_tokens(j))) if tokenizer is not None else str
            out.append([(name(j), float(w)) for j, w in pairs])
        return out

    @staticmethod
    def similarity(a: scipy.sparse.spmatrix, b: scipy.sparse.spmatrix) -> np.ndarray:
        """Dot products of every row of `a` with every row of `b` (SPLADE's score), dense (len(a), len(b))."""
        return np.asarray((scipy.sparse.csr_matrix(a) @ scipy.sparse.csr_matrix(b).T).todense(), dtype=np.float32)

    @staticmethod
    def sparsity(vectors: scipy.sparse.spmatrix) -> dict[str, float]:
        """Mean active dimensions per row and the share of zeros."""
        rows = scipy.sparse.csr_matrix(vectors)
        active = float(np.diff(rows.indptr).mean()) if rows.shape[0] else 0.0
        return {"active_dims": active, "sparsity_ratio": 1.0 - active / max(rows.shape[1], 1)}

    def save(self, path: str | os.PathLike[str], *, extras: Callable[[Path], None] | None = None) -> None:
        """Write sentence-transformers' SparseEncoder layout atomically (the old copy survives a crash).

        `extras` may add files (a model card) inside the same atomic write.
        """
        with layout.atomic_directory(path) as tmp:
            if self.dense is not None and self.sae is not None:
                save_csr(tmp, self.dense.chain(), self.sae, model_config(self._saved_settings()))
            else:
                save_sparse(tmp, (*self._splade(), self.query), model_config(self._saved_settings()))
            if extras is not None:
                extras(tmp)

    def _saved_settings(self) -> EncoderSettings:
        # The top-k in use is the one saved, as sentence-transformers saves its max_active_dims.
        return replace(self.settings, max_active_dims=self.max_active_dims)


def _convert(rows: scipy.sparse.csr_matrix, convert_to: str, single: bool) -> Any:
    """A CSR matrix (or a torch sparse COO tensor), one row alone for a single input."""
    if convert_to == "torch":
        tensor = csr_to_torch(rows)
        return tensor[0] if single else tensor
    return rows[0] if single else rows
