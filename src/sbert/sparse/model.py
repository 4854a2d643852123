"""SparseEncoder: texts to sparse vocabulary-weight vectors (SPLADE), in sentence-transformers' layout."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal, Self

import numpy as np
import scipy.sparse
import torch
from torch import nn
from tqdm.auto import tqdm

from sbert import layout
from sbert.device import resolve_device
from sbert.errors import ModelFormatError, SbertError
from sbert.model_config import EncoderSettings, model_config, read_settings
from sbert.model_dirs import resolve_model_dir
from sbert.sparse.engine import splade_batch, to_csr, top_k
from sbert.sparse.loading import load_sparse, save_sparse
from sbert.sparse.mlm import MLMTransformer
from sbert.sparse.splade import SpladePooling
from sbert.sparse.static_query import SparseStaticEmbedding


class SparseEncoder(nn.Module):
    """SPLADE: an MLM backbone and SPLADE pooling, one weight per vocabulary token, most of them zero.

    With `query` (inference-free SPLADE), queries skip the transformer: each of their tokens gets a fixed weight.
    """

    def __init__(
        self, mlm: MLMTransformer, pooling: SpladePooling, query: SparseStaticEmbedding | None = None,
        device: str | torch.device | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.mlm, self.pooling, self.query = mlm, pooling, query
        if query is not None and query.weight.shape[0] != mlm.vocab_size:
            raise ModelFormatError(f"query weights cover {query.weight.shape[0]} tokens; the MLM head {mlm.vocab_size}")
        self.settings = EncoderSettings()
        self.max_active_dims: int | None = None
        self.to(resolve_device(device))
        self.eval()

    @classmethod
    def load(cls, name_or_path: str | os.PathLike[str], device: str | torch.device | None = None,
             trust_remote_code: bool = False, max_active_dims: int | None = None) -> Self:  # fmt: skip
        """Load a SPLADE model: a sentence-transformers SparseEncoder folder, or a plain MLM (max pooling, relu)."""
        root = resolve_model_dir(name_or_path)
        model = cls(*load_sparse(root, trust_remote_code), device=device)
        model.settings = read_settings(root)
        model.max_active_dims = _check_k(max_active_dims)
        return model

    @property
    def dimension(self) -> int:
        """Vocabulary size: the width of every sparse vector."""
        return self.mlm.vocab_size

    @property
    def device(self) -> torch.device:
        """Where the weights live."""
        return next(self.parameters()).device

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
    ) -> Any:
        """Sparse vectors, one row per sentence, in input order: a scipy CSR matrix (or a torch sparse COO tensor).

        `max_active_dims` keeps each row's k largest weights (default: the model's setting, else all).
        """
        single = isinstance(sentences, str)
        texts = [sentences] if isinstance(sentences, str) else list(sentences)
        if batch_size < 1:
            raise SbertError(f"batch_size={batch_size}: must be >= 1")
        if convert_to not in ("csr", "torch"):
            raise SbertError(f"convert_to={convert_to!r}: use csr or torch")
        k = _check_k(max_active_dims) or self.max_active_dims
        text = self.settings.resolve_prompt(task=task, prompt_name=prompt_name, prompt=prompt)
        prompted = [text + t for t in texts] if text else texts
        if task == "query" and self.query is not None:  # inference-free: a table lookup, no transformer
            result = _top_k_csr(self.query.encode_csr(prompted), k)
            return _convert(result, convert_to, single)
        ids, _ = self.mlm.token_ids(prompted)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))  # similar lengths share a batch: less padding
        parts = []
        for start in tqdm(range(0, len(order), batch_size), disable=not show_progress, unit="batch"):
            features = self.mlm.pad([ids[i] for i in order[start : start + batch_size]])
            features = {name: value.to(self.device) for name, value in features.items()}
            parts.append(to_csr(top_k(splade_batch(self.mlm, self.pooling, features), k)))
        stacked = scipy.sparse.vstack(parts, format="csr") if parts else scipy.sparse.csr_matrix((0, self.dimension))
        inverse = np.empty(len(order), dtype=np.int64)
        inverse[order] = np.arange(len(order))
        return _convert(stacked[inverse], convert_to, single)

    def encode_query(self, sentences: str | Sequence[str], **options: Any) -> Any:
        """`encode` with the model's query prompt (its `query` prompt, if it has one)."""
        return self.encode(sentences, task="query", **options)

    def encode_document(self, sentences: str | Sequence[str], **options: Any) -> Any:
        """`encode` with the model's document prompt."""
        return self.encode(sentences, task="document", **options)

    def decode(self, vectors: scipy.sparse.spmatrix, top: int | None = None) -> list[list[tuple[str, float]]]:
        """Each row's (token, weight) pairs, heaviest first (the `top` heaviest for an int)."""
        rows = scipy.sparse.csr_matrix(vectors)
        tokenizer = self.mlm.tokenizer
        out = []
        for i in range(rows.shape[0]):
            row = rows.getrow(i)
            pairs = sorted(zip(row.indices.tolist(), row.data.tolist(), strict=True), key=lambda p: -p[1])[:top]
            out.append([(str(tokenizer.convert_ids_to_tokens(j)), float(w)) for j, w in pairs])
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

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write sentence-transformers' SparseEncoder layout atomically (the old copy survives a crash)."""
        with layout.atomic_directory(path) as tmp:
            save_sparse(tmp, (self.mlm, self.pooling, self.query), model_config(self.settings))


def _check_k(k: int | None) -> int | None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k <= 0):
        raise SbertError(f"max_active_dims={k!r}: must be a positive integer")
    return k


def _top_k_csr(rows: scipy.sparse.csr_matrix, k: int | None) -> scipy.sparse.csr_matrix:
    """Keep each CSR row's k largest weights."""
    if k is None:
        return rows
    out = rows.tolil()
    for i in range(rows.shape[0]):
        start, end = rows.indptr[i], rows.indptr[i + 1]
        if end - start > k:
            drop = rows.indices[start:end][np.argsort(-rows.data[start:end], kind="stable")[k:]]
            out[i, drop] = 0
    result = out.tocsr()
    result.eliminate_zeros()
    return result


def _convert(rows: scipy.sparse.csr_matrix, convert_to: str, single: bool) -> Any:
    """A CSR matrix (or a torch sparse COO tensor), one row alone for a single input."""
    if convert_to == "torch":
        coo = rows.tocoo()
        index = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
        tensor = torch.sparse_coo_tensor(index, torch.from_numpy(coo.data), coo.shape).coalesce()
        return tensor[0] if single else tensor
    return rows[0] if single else rows
