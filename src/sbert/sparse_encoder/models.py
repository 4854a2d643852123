"""sentence-transformers 6.2's `sentence_transformers.sparse_encoder.models`: SPLADE and CSR built from modules.

    from sbert import SparseEncoder
    from sbert.sparse_encoder.models import SpladePooling, Transformer
    mlm = Transformer("path/to/bert-mlm", transformer_task="fill-mask")
    model = SparseEncoder(modules=[mlm, SpladePooling("max")])

The modules are sbert's own (what `sbert.load` builds from a SparseEncoder folder) with 6.2's
constructors; `SparseEncoder(modules=[...])` takes SPLADE (an MLM module and SpladePooling), inference-free
SPLADE (a Router with a SparseStaticEmbedding query route) and CSR (a dense chain then a SparseAutoEncoder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from sbert.models import Asym, Dense, Router, Transformer, load_6_2
from sbert.sparse.csr import SparseAutoEncoder
from sbert.sparse.mlm import MLMTransformer as _MLMTransformer
from sbert.sparse.mlm import check_mlm_head
from sbert.sparse.splade import SpladePooling
from sbert.sparse.static_query import SparseStaticEmbedding as _SparseStaticEmbedding


class MLMTransformer(_MLMTransformer):
    """`MLMTransformer(model_name_or_path, ...)`: 6.2's deprecated name for a fill-mask Transformer."""

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
        check_mlm_head(Path(model_name_or_path))  # a checkpoint without MLM head weights would train a random head
        loaded = load_6_2(_MLMTransformer, model_name_or_path, "fill-mask", model_kwargs=model_kwargs,
                          processor_kwargs=processor_kwargs, config_kwargs=config_kwargs,
                          max_seq_length=max_seq_length, tokenizer_name_or_path=tokenizer_name_or_path,
                          others=others)  # fmt: skip
        super().__init__(loaded.auto_model, loaded.tokenizer, loaded.max_seq_length, do_lower_case)


class SparseStaticEmbedding(_SparseStaticEmbedding):
    """`SparseStaticEmbedding(tokenizer, weight=None, frozen=False)`: weights start at 1 per token, as in 6.2."""

    def __init__(self, tokenizer: Any, weight: torch.Tensor | None = None, frozen: bool = False) -> None:
        super().__init__(tokenizer, torch.ones(len(tokenizer.get_vocab())) if weight is None else weight, frozen)


__all__ = ["Asym", "Dense", "MLMTransformer", "Router", "SparseAutoEncoder", "SparseStaticEmbedding", "SpladePooling",
           "Transformer"]  # fmt: skip
