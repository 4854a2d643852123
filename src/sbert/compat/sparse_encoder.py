"""`SparseEncoder`: sentence-transformers' constructor and return types on sbert's SPLADE / CSR encoder.

A thin subclass of `sbert.sparse.SparseEncoder` (one engine). As in sentence-transformers 6.2:
`SparseEncoder(path)` loads; `encode` returns a torch sparse COO tensor by default (`(n, vocab)`, one
row for a single string), a dense tensor for `convert_to_sparse_tensor=False`, a list of row tensors
for `convert_to_tensor=False`; `similarity` / `similarity_pairwise` return torch tensors; `decode`
takes a tensor and `top_k`; `sparsity` reads a tensor. sbert's own spelling keeps its meaning:
`encode(..., convert_to="csr")` returns the scipy CSR matrix sbert's native class returns, and
`backend=` picks the runtime.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import scipy.sparse
import torch

from sbert.compat.constructor_options import check_options
from sbert.compat.conventions import ModelFacts, TaskEncodes, apply_prompts, routed_prompt
from sbert.compat.model_card import SparseEncoderModelCardData
from sbert.compat.model_parts import warn_pool_unused
from sbert.renamed_kwargs import renamed_kwargs
from sbert.similarity import check_similarity, pairwise_similarity, similarity_matrix
from sbert.sparse.engine import check_k, csr_to_torch
from sbert.sparse.loading import parts_from_modules
from sbert.sparse.model import SparseEncoder as NativeSparseEncoder


class SparseEncoder(ModelFacts, TaskEncodes, NativeSparseEncoder):  # type: ignore[misc]
    """`SparseEncoder("path/to/splade")` loads; `encode` answers as sentence-transformers' does."""

    native_class = NativeSparseEncoder  # what `sbert.native.native()` gives the server, index and trainer
    model_type = "SparseEncoder"
    model_card_data_class = SparseEncoderModelCardData

    @renamed_kwargs(tokenizer_kwargs="processor_kwargs")
    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str] | None = None,
        *,
        modules: Sequence[Any] | None = None,
        device: str | torch.device | None = None,
        prompts: dict[str, str] | None = None,
        default_prompt_name: str | None = None,
        similarity_fn_name: str | None = None,
        max_active_dims: int | None = None,
        trust_remote_code: bool = False,
        model_card_data: SparseEncoderModelCardData | None = None,
        backend: str = "torch",
        **parts: Any,  # sbert's own (load): mlm, pooling, query, dense, sae; the rest: compat/constructor_options.py
    ) -> None:
        self.model_card_data = model_card_data
        self.set_backend(backend)
        native = {k: parts.pop(k) for k in ("mlm", "pooling", "query", "dense", "sae") if k in parts}
        check_options("SparseEncoder", parts)
        if modules is not None:  # 6.2's modules=[...]: SPLADE, inference-free SPLADE or CSR, built by the caller
            super().__init__(device=device, **parts_from_modules(modules))
            self.max_active_dims = check_k(max_active_dims)
            if self.dense is not None:
                self.dense.settings = self.settings
        elif model_name_or_path is None:  # sbert's own constructors (load)
            super().__init__(device=device, **native)
        else:
            loaded = NativeSparseEncoder.load(model_name_or_path, device=device, trust_remote_code=trust_remote_code,
                                              max_active_dims=max_active_dims)  # fmt: skip
            super().__init__(loaded.mlm, loaded.pooling, loaded.query, loaded.device, dense=loaded.dense,
                             sae=loaded.sae)  # fmt: skip
            self.settings, self.source_dir = loaded.settings, loaded.source_dir
            self.max_active_dims = loaded.max_active_dims
        apply_prompts(self.settings, prompts, default_prompt_name)
        if similarity_fn_name is not None:
            self.similarity_fn_name = similarity_fn_name

    @property
    def similarity_fn_name(self) -> str:
        """Dot (SPLADE's score) or cosine, euclidean, manhattan: what `similarity` computes."""
        return self.settings.similarity_fn_name

    @similarity_fn_name.setter
    def similarity_fn_name(self, name: str) -> None:
        self.settings.similarity_fn_name = check_similarity(name)

    @property
    def tokenizer(self) -> Any:
        """The Hugging Face tokenizer of the document encoder."""
        return self._document_input().tokenizer

    def is_singular_input(self, inputs: Any) -> bool:
        """Whether `inputs` is one text (or one {"text": ...} dict) rather than a list of them."""
        return isinstance(inputs, str | dict)

    def tokenize(self, texts: Sequence[Any], **kwargs: Any) -> dict[str, Any]:
        """6.2's older name for `preprocess`."""
        return self.preprocess(texts, **kwargs)

    @property
    def splade_pooling_chunk_size(self) -> int | None:
        """None: sbert's SPLADE pooling takes the max over a batch's tokens in one pass, with no chunk setting."""
        return None

    def get_sentence_embedding_dimension(self) -> int:
        """The width of every sparse vector."""
        return self.dimension

    def get_embedding_dimension(self) -> int:
        """The width of every sparse vector (6.2's newer name)."""
        return self.dimension

    def forward(self, input: dict[str, torch.Tensor], **kwargs: Any) -> dict[str, torch.Tensor]:
        """Tokenized features through the SPLADE modules: `sentence_embedding` holds the (B, vocab) vectors."""
        if self.mlm is None or self.pooling is None:
            raise NotImplementedError("forward runs a SPLADE model's modules; this is a CSR model (dense + SAE)")
        return cast(dict[str, torch.Tensor], self.pooling(self.mlm(dict(input))))

    @renamed_kwargs(sentences="inputs")
    def encode(  # type: ignore[override]
        self,
        inputs: str | Sequence[str] | None = None,
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        convert_to_tensor: bool = True,
        convert_to_sparse_tensor: bool = True,
        save_to_cpu: bool = False,
        device: Any = None,
        max_active_dims: int | None = None,
        pool: dict[str, Any] | None = None,
        chunk_size: int | None = None,
        **options: Any,
    ) -> Any:
        """Sparse vectors as sentence-transformers 6.2 returns them (see the module docstring for the types)."""
        if "task_metadata" in options:  # mteb's call: the native entry answers it (sbert/mteb_protocol.py)
            return super().encode(
                cast(Any, inputs), **{"batch_size": batch_size, "show_progress_bar": show_progress_bar, **options}
            )
        inputs = options.pop("sentences") if inputs is None else inputs  # sentence-transformers' older name
        warn_pool_unused(pool, "SparseEncoder.encode")
        options.setdefault("show_progress", bool(show_progress_bar))
        prompt = routed_prompt(self.settings, options.get("task"), prompt_name, prompt)
        native = options.pop("convert_to", None)
        options.setdefault("backend", self.get_backend())
        rows = super().encode(inputs, batch_size=batch_size, prompt_name=prompt_name, prompt=prompt,
                              max_active_dims=max_active_dims, convert_to=native or "csr", **options)  # fmt: skip
        if native is not None:  # sbert's own spelling: its own types
            return rows
        single = isinstance(inputs, str)
        matrix = scipy.sparse.csr_matrix(rows if not single else scipy.sparse.vstack([rows]))
        tensor = _tensor(matrix, sparse=convert_to_sparse_tensor)
        out: Any = tensor if save_to_cpu else tensor.to(self.device)
        if not convert_to_tensor:
            out = list(out)
        return out[0] if single else out

    def similarity(self, embeddings1: Any, embeddings2: Any) -> torch.Tensor:  # type: ignore[override]
        """(n, m) torch tensor: the model's similarity function of every pair of rows."""
        left, right = as_csr(embeddings1), as_csr(embeddings2)
        if self.similarity_fn_name == "dot":  # sparse product: the rows never become dense
            scores = np.asarray((left @ right.T).todense(), dtype=np.float32)
        else:
            scores = similarity_matrix(left.toarray(), right.toarray(), self.similarity_fn_name)
        return torch.from_numpy(np.ascontiguousarray(scores, dtype=np.float32))

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> torch.Tensor:  # type: ignore[override]
        """(n,) torch tensor: the model's similarity of row i of `embeddings1` with row i of `embeddings2`."""
        left, right = as_csr(embeddings1).toarray(), as_csr(embeddings2).toarray()
        scores = pairwise_similarity(left, right, self.similarity_fn_name)
        return torch.from_numpy(np.ascontiguousarray(scores, dtype=np.float32))

    def decode(self, embeddings: Any, top_k: int | None = None, **options: Any) -> Any:  # type: ignore[override]
        """(token, weight) pairs, heaviest first: one list for a 1-D vector, a list per row for a 2-D one."""
        if "top" in options:  # sbert's name for it
            top_k = options.pop("top")
        if top_k is not None and top_k <= 0:
            raise ValueError(f"top_k must be a positive integer, got {top_k}")
        single = isinstance(embeddings, torch.Tensor) and embeddings.ndim == 1
        decoded = super().decode(as_csr(embeddings), top_k)
        return decoded[0] if single else decoded

    @staticmethod
    def intersection(embeddings_1: torch.Tensor, embeddings_2: torch.Tensor) -> torch.Tensor:
        """The dimensions two sparse vectors share, weighted by their product (a sparse COO tensor).

        `embeddings_1` is one vector (vocab,); `embeddings_2` one vector or rows (n, vocab). Only products
        above 0 stay, so `decode` of the result names the tokens both texts activate.
        """
        one = embeddings_1.to_dense() if embeddings_1.is_sparse else embeddings_1
        other = embeddings_2.to_dense() if embeddings_2.is_sparse else embeddings_2
        if one.ndim != 1:
            raise ValueError(f"Expected 1D tensor for embeddings_1, but got {tuple(one.shape)} shape.")
        if other.ndim not in (1, 2):
            raise ValueError(f"Expected 1D or 2D tensor for embeddings_2, but got {tuple(other.shape)} shape.")
        if one.shape[-1] != other.shape[-1]:
            raise ValueError(f"Vocab dimension mismatch: embeddings_1 has {one.shape[-1]}, "
                             f"embeddings_2 has {other.shape[-1]}.")  # fmt: skip
        product = other * one
        return torch.where(product > 0, product, torch.zeros_like(product)).to_sparse().coalesce()

    @staticmethod
    def sparsity(embeddings: Any) -> dict[str, float]:
        """Mean active dimensions per row and the share of zeros."""
        return NativeSparseEncoder.sparsity(as_csr(embeddings))


def _tensor(rows: scipy.sparse.csr_matrix, sparse: bool) -> torch.Tensor:
    """float32 rows as a coalesced torch sparse COO tensor, or dense."""
    if not sparse:
        return torch.from_numpy(np.asarray(rows.toarray(), dtype=np.float32))
    return csr_to_torch(rows)


def as_csr(x: Any) -> scipy.sparse.csr_matrix:
    """Sparse rows from a torch tensor (sparse or dense, 1-D or 2-D), a list of them, numpy or scipy: float32 CSR."""
    if scipy.sparse.issparse(x):
        return scipy.sparse.csr_matrix(x, dtype=np.float32)
    if isinstance(x, list | tuple):
        return scipy.sparse.vstack([as_csr(row) for row in x], format="csr") if x else scipy.sparse.csr_matrix((0, 0))
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        x = x.unsqueeze(0) if x.ndim == 1 else x
        if x.is_sparse:
            x = x.coalesce()
            index, values = x.indices().numpy(), x.values().float().numpy()
            return scipy.sparse.csr_matrix((values, (index[0], index[1])), shape=tuple(x.shape))
        return scipy.sparse.csr_matrix(x.float().numpy())
    array = np.asarray(x, dtype=np.float32)
    return scipy.sparse.csr_matrix(array[None] if array.ndim == 1 else array)
