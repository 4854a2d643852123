"""The torch engine of a multi-vector chain: padded smart batches in, one (n_tokens, dim) matrix per text out.

It shares the dense runtime's pieces (length-ordered token-budget batches, a weight copy per
device and dtype, one single-threaded batch per CPU core) and differs only in its output: the
scored token rows of each text, without padding. With a packed engine (multivector/packed.py, the
CUDA default) the tasks it can take run padding-free, in batches cut by real tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch
from tqdm.auto import tqdm

from sbert.backends.base import cast_copy, run_threaded
from sbert.backends.torch_cpu import CPU_BATCH_TOKENS, MAX_ROWS
from sbert.encoding.engine import PROGRESS_MIN_SENTENCES
from sbert.modules import Module, Transformer
from sbert.multivector.tokens import SCORED, TokenRules
from sbert.vectors.batching import length_order, packed_batches, token_batches

if TYPE_CHECKING:
    from sbert.backends.feature_graph import FeatureGraphEngine
    from sbert.multivector.packed import PackedMultiVector

TOKENS = "token_embeddings"


class MultiVectorEngine:
    """Runs Transformer -> token heads on `device` in `dtype`; returns each text's scored token vectors."""

    def __init__(
        self, modules: Sequence[Module], rules: TokenRules, device: torch.device, dtype: torch.dtype,
        graph: FeatureGraphEngine | None = None, packed: PackedMultiVector | None = None,
    ) -> None:  # fmt: skip
        self.modules = cast_copy(modules, device, dtype) if graph is None else tuple(modules)
        self.rules, self.device, self.graph, self.packed = rules, device, graph, packed
        # torch: one single-threaded batch per core; a graph runtime spreads one batch over its own threads
        self.workers = torch.get_num_threads() if device.type == "cpu" and graph is None else 1

    @property
    def transformer(self) -> Transformer:
        """The encoder at the head of the chain."""
        first = self.modules[0]
        assert isinstance(first, Transformer)
        return first

    def embed_batch(self, rows: Sequence[Sequence[int]], task: str | None) -> list[np.ndarray]:
        """float32 (n_scored_i, dim) per row of token ids."""
        features = self.rules.pad(self.transformer, rows, task)
        scored = features.pop(SCORED)
        if self.graph is not None:
            flat = self.graph.embed(features)[scored.numpy()]  # (sum scored, dim), rows in order
        else:
            moved = {k: v.to(self.device, non_blocking=True) for k, v in features.items()}
            with torch.inference_mode():
                for module in self.modules:
                    moved = module(moved)
                flat = moved[TOKENS].float()[scored.to(self.device)].cpu().numpy()
        return np.split(flat, np.cumsum(scored.sum(1).tolist())[:-1]) if rows else []

    def run(
        self, ids: Sequence[Sequence[int]], task: str | None, batch_size: int | None = None,
        batch_tokens: int | None = None, show_progress: bool | None = None,
    ) -> list[np.ndarray]:  # fmt: skip
        """Every row's matrix, in input order; batches fill a token budget (padded or packed), longest rows first."""
        packed = self.packed if self.packed is not None and self.packed.packable(task) else None
        rows = batch_size or MAX_ROWS
        lengths = [self._width(len(r), task) for r in ids]  # a packed row takes its expansion too
        if packed is not None:
            from sbert.multivector.packed import PACKED_TOKENS

            cut = packed_batches(length_order(lengths), lengths, batch_tokens or PACKED_TOKENS, rows)
        else:
            cut = token_batches(length_order(lengths), lengths, batch_tokens or CPU_BATCH_TOKENS, rows)
        embed = packed.embed_batch if packed is not None else self.embed_batch
        out: list[np.ndarray] = [np.zeros((0, 0), np.float32)] * len(ids)

        def job(batch: list[int]) -> tuple[list[int], list[np.ndarray]]:
            return batch, embed([ids[i] for i in batch], task)

        show = len(ids) >= PROGRESS_MIN_SENTENCES if show_progress is None else show_progress
        with tqdm(total=len(ids), unit="text", disable=not show) as bar:
            for batch, mats in run_threaded(cut, job, 1 if packed is not None else self.workers):
                for i, m in zip(batch, mats, strict=True):
                    out[i] = m
                bar.update(len(batch))
        return out

    def _width(self, n: int, task: str | None) -> int:
        """The width a row takes, padded or packed: an expanded query is at least the expansion length."""
        exp = self.rules.settings.expansion if task == "query" else None
        return max(n, exp.length) if exp is not None else n
