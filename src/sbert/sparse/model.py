"""SparseEncoder: texts to sparse vocabulary-weight vectors (SPLADE), in sentence-transformers' layout."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
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
from sbert.sparse.mlm import MLMTransformer, check_mlm_head, is_fill_mask
from sbert.sparse.splade import SpladePooling

_LATER = {"SparseStaticEmbedding": "inference-free SPLADE", "SparseAutoEncoder": "CSR", "Router": "a routed model"}


class SparseEncoder(nn.Sequential):
    """An MLM backbone and SPLADE pooling: one weight per vocabulary token, most of them zero."""

    def __init__(self, modules: Sequence[nn.Module], device: str | torch.device | None = None) -> None:
        super().__init__(*modules)
        if len(modules) != 2 or not isinstance(modules[0], MLMTransformer) or not isinstance(modules[1], SpladePooling):
            raise ModelFormatError("a SparseEncoder is an MLMTransformer followed by SpladePooling")
        self.settings = EncoderSettings()
        self.max_active_dims: int | None = None
        self.to(resolve_device(device))
        self.eval()

    @classmethod
    def load(cls, name_or_path: str | os.PathLike[str], device: str | torch.device | None = None,
             trust_remote_code: bool = False, max_active_dims: int | None = None) -> Self:  # fmt: skip
        """Load a SPLADE model: a sentence-transformers SparseEncoder folder, or a plain MLM (max pooling, relu)."""
        root = resolve_model_dir(name_or_path)
        model = cls(_load_modules(root, trust_remote_code), device=device)
        model.settings = read_settings(root)
        model.max_active_dims = _check_k(max_active_dims)
        return model

    @property
    def mlm(self) -> MLMTransformer:
        """The backbone with its MLM head."""
        module = self[0]
        assert isinstance(module, MLMTransformer)
        return module

    @property
    def pooling(self) -> SpladePooling:
        """The SPLADE pooling."""
        module = self[1]
        assert isinstance(module, SpladePooling)
        return module

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
        ids, _ = self.mlm.token_ids([text + t for t in texts] if text else texts)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))  # similar lengths share a batch: less padding
        parts = []
        for start in tqdm(range(0, len(order), batch_size), disable=not show_progress, unit="batch"):
            features = self.mlm.pad([ids[i] for i in order[start : start + batch_size]])
            features = {name: value.to(self.device) for name, value in features.items()}
            parts.append(to_csr(top_k(splade_batch(self.mlm, self.pooling, features), k)))
        stacked = scipy.sparse.vstack(parts, format="csr") if parts else scipy.sparse.csr_matrix((0, self.dimension))
        inverse = np.empty(len(order), dtype=np.int64)
        inverse[order] = np.arange(len(order))
        result = stacked[inverse]
        if convert_to == "torch":
            coo = result.tocoo()
            index = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
            tensor = torch.sparse_coo_tensor(index, torch.from_numpy(coo.data), coo.shape).coalesce()
            return tensor[0] if single else tensor
        return result[0] if single else result

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
            self.mlm.save(tmp)
            self.pooling.save(tmp / "1_SpladePooling")
            entries = [layout.ModuleEntry(0, "0", "", "sentence_transformers.models.Transformer"),
                       layout.ModuleEntry(1, "1", "1_SpladePooling", SpladePooling.module_type)]  # fmt: skip
            layout.write_modules(tmp, entries)
            config = {**model_config(self.settings), "model_type": "SparseEncoder"}
            layout.write_json(tmp / layout.MODEL_CONFIG_FILE, config)


def _check_k(k: int | None) -> int | None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k <= 0):
        raise SbertError(f"max_active_dims={k!r}: must be a positive integer")
    return k


def _load_modules(root: Path, trust_remote_code: bool) -> list[nn.Module]:
    """The two modules of a SPLADE folder, or a one-line error naming what the folder is instead."""
    if not (root / layout.MODULES_FILE).is_file():
        check_mlm_head(root)  # a plain MLM checkpoint: SPLADE max pooling on it, as sentence-transformers does
        return [MLMTransformer.from_pretrained(root, trust_remote_code=trust_remote_code), SpladePooling()]
    entries = layout.read_modules(root)
    names = [e.type.rsplit(".", 1)[-1] for e in entries]
    later = [_LATER[n] for n in names if n in _LATER]
    if later:
        raise ModelFormatError(f"{root}: {later[0]} sparse models are not supported yet (modules: {', '.join(names)})")
    if "SpladePooling" not in names:
        raise ModelFormatError(f"{root}: a dense model ({', '.join(names)}): load it with sbert.SentenceEncoder")
    first, pooling = entries[0], entries[-1]
    if len(entries) != 2 or not first.type.endswith("Transformer") or not is_fill_mask(root / first.path, first.type):
        raise ModelFormatError(f"{root}: expected a fill-mask Transformer then SpladePooling, got {', '.join(names)}")
    mlm = MLMTransformer.load(root / first.path, trust_remote_code=trust_remote_code)
    return [mlm, SpladePooling.load(root / pooling.path)]
