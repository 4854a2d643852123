"""The CPU torch backend: padded smart batches, one single-threaded batch per core at a time."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch

from sbert.backends.base import Chain, Rows, cast_copy, embed_padded, is_large, run_threaded
from sbert.backends.pages import trim_heap
from sbert.modules import Module, Transformer

# Padded tokens per batch at MiniLM's width (384), measured on 2 cores with one batch per core at
# a time (benchmarks/speed/encode_speed.py --sweep; docs/speed.md). Wider models get fewer tokens,
# the same activation volume: on a 1024-wide decoder 192 tokens ran int8 1.12x faster than 512
# (benchmarks/speed/batch_budget.py); on BERT-base 256 and 512 were level (0.99x fp32, 1.02x int8).
CPU_BATCH_TOKENS = 512
BATCH_WIDTH = 384
MIN_BATCH_TOKENS = 64
MAX_ROWS = 512


def cpu_batch_tokens(modules: Sequence[Module]) -> int:
    """Padded tokens per CPU batch for this chain: CPU_BATCH_TOKENS up to MiniLM's width, scaled down past it."""
    first = modules[0]
    width = first.embedding_dimension if isinstance(first, Transformer) else BATCH_WIDTH
    return max(MIN_BATCH_TOKENS, CPU_BATCH_TOKENS * BATCH_WIDTH // max(width, BATCH_WIDTH))


def trims_heap(modules: Sequence[Module], device: torch.device) -> bool:
    """Whether the CPU batches of these modules end by trimming the C heap (`pages.trim_heap`).

    A large model's memory bound is 1.5x its weights, and malloc's freed-but-kept blocks count
    against it; on small models the trims would cost more time than the memory they free.
    """
    return device.type == "cpu" and is_large(modules)


class TorchCpuBackend:
    """Runs the chain in torch on the CPU (or any device without a pipeline of its own)."""

    name = "torch"
    packed = False
    default_batch_tokens = CPU_BATCH_TOKENS
    max_rows = MAX_ROWS

    def __init__(self, chain: Chain, device: torch.device, dtype: torch.dtype = torch.float32) -> None:
        self.chain, self.device = chain, device
        self.modules = cast_copy(chain.modules, device, dtype)
        self.workers = torch.get_num_threads() if device.type == "cpu" else 1
        self.trim = trims_heap(self.modules, device)
        self.default_batch_tokens = cpu_batch_tokens(self.modules)

    def embed(self, rows: Sequence[Sequence[int]], skip: int = 0) -> np.ndarray:
        """float32 vectors (B, dim) of one batch of token id lists (the first `skip` positions not pooled)."""
        with torch.inference_mode():
            return embed_padded(self.modules, self.chain.pad(rows), self.device, skip).float().cpu().numpy()

    def run(self, ids: Sequence[Sequence[int]], batches: list[list[int]], skip: int = 0) -> Iterator[Rows]:
        """(batch, vectors) in batch order, `workers` batches at a time from threads."""

        def job(batch: list[int]) -> Rows:
            vectors = self.embed([ids[i] for i in batch], skip)
            if self.trim:
                trim_heap()
            return batch, vectors

        yield from run_threaded(batches, job, self.workers)
