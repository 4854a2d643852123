"""The CPU torch backend: padding-free batches where the encoder packs, one single-threaded batch per core at a time.

A packed batch runs the linear layers on its real tokens only and attention per sentence (varlen.grid_sdpa);
padded batches pay for every pad, which a batch of unsorted short texts (a server's merged requests) is
mostly made of: MiniLM on random 16-sentence batches cost 11.4 ms a sentence padded and 5.6 packed on one
core. Encoders that cannot pack (MPNet's relative positions, ...) run padded smart batches.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from sbert.adapters.peft_io import has_adapter
from sbert.backends.base import Chain, Rows, cast_copy, embed_padded, is_large, run_threaded
from sbert.backends.packed_chain import packed_chain_forward, position_offset, switch_to_packed
from sbert.backends.packing import pack
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


# A lone batch is cut for the cores only when each part keeps this many real tokens; below, one core runs it
# whole on one thread (a cut 4-text batch cost 14.2 ms a sentence against 8.8 whole). Cutting trades CPU for
# time: MiniLM, random STS sentences, 16-text groups: cut 8.4 ms CPU (5.1 wall) a sentence, whole on one
# thread 7.0 (7.1), whole on two intra-op threads 9.6 (4.9). Served (16 one-text clients, 2 cores), cutting
# at 128 tokens a part gave 120 texts/s at 8.3 ms of server CPU a text, at 48 tokens 141 texts/s at 9.3 ms.
SPLIT_MIN_TOKENS = 48


def per_core(batches: list[list[int]], lengths: Sequence[int], workers: int) -> list[list[int]]:
    """The batches, a lone one of enough tokens cut into `workers` runs of about equal tokens, one per core.

    A server's merged group of short requests is often one batch: run whole on both cores through
    intra-op threads it spends more CPU than it saves on matrices this small.
    """
    if len(batches) != 1 or workers <= 1 or len(batches[0]) < 2:
        return batches
    rows = batches[0]
    parts = min(workers, len(rows))
    total = sum(lengths[i] for i in rows)
    if total < SPLIT_MIN_TOKENS * parts:
        return batches
    share = total / parts
    cuts: list[list[int]] = [[]]
    seen = 0
    for i in rows:
        if cuts[-1] and seen >= share * len(cuts) and len(cuts) < parts:
            cuts.append([])
        cuts[-1].append(i)
        seen += lengths[i]
    return cuts


@functools.cache
def one_thread() -> ThreadPoolExecutor:
    """The worker that runs a lone batch on one torch thread (made on first use, kept for the process)."""
    return ThreadPoolExecutor(1, thread_name_prefix="sbert-batch", initializer=torch.set_num_threads, initargs=(1,))


def packs_on_cpu(chain: Chain) -> bool:
    """Whether to try packed batches for this chain: a plain float encoder at its head.

    A PEFT adapter stays padded, and so do Linears held in int8 (dtype="int8"): their activations are
    quantized per batch, so dropping the pads would move the vectors off the torch-int8 backend's.
    """
    first = chain.modules[0] if chain.modules else None
    if not isinstance(first, Transformer) or has_adapter(first.auto_model):
        return False
    # Linears held in int8 say how many bytes they hold outside their parameters (backends/base.weight_bytes).
    return not any(hasattr(m, "held_bytes") for m in first.modules())


class TorchCpuBackend:
    """Runs the chain in torch on the CPU (or any device without a pipeline of its own)."""

    name = "torch"
    packed = False  # set per instance where the encoder packs (subclasses that build their own modules stay padded)
    default_batch_tokens = CPU_BATCH_TOKENS
    max_rows = MAX_ROWS

    def __init__(self, chain: Chain, device: torch.device, dtype: torch.dtype = torch.float32) -> None:
        self.chain, self.device = chain, device
        self.modules = cast_copy(chain.modules, device, dtype)
        self.packed, self.offset = False, 0
        if device.type == "cpu" and packs_on_cpu(chain):
            self.modules, kernel = switch_to_packed(chain, self.modules, device, dtype)
            self.packed, self.offset = kernel is not None, position_offset(chain.transformer)
        self.workers = torch.get_num_threads() if device.type == "cpu" else 1
        self.trim = trims_heap(self.modules, device)
        self.default_batch_tokens = cpu_batch_tokens(self.modules)

    def embed(self, rows: Sequence[Sequence[int]], skip: int = 0) -> np.ndarray:
        """float32 vectors (B, dim) of one batch of token id lists (the first `skip` positions not pooled)."""
        with torch.inference_mode():
            if self.packed:
                return packed_chain_forward(self.modules, pack(rows, self.offset), skip).float().numpy()
            return embed_padded(self.modules, self.chain.pad(rows), self.device, skip).float().cpu().numpy()

    def run(self, ids: Sequence[Sequence[int]], batches: list[list[int]], skip: int = 0) -> Iterator[Rows]:
        """(batch, vectors) in batch order, `workers` batches at a time from threads."""

        def job(batch: list[int]) -> Rows:
            vectors = self.embed([ids[i] for i in batch], skip)
            if self.trim:
                trim_heap()
            return batch, vectors

        planned = per_core(batches, [len(r) for r in ids], self.workers)
        if len(planned) == 1 and self.workers > 1 and self.device.type == "cpu":
            yield one_thread().submit(job, planned[0]).result()  # the lone batch: one core, one thread
            return
        yield from run_threaded(planned, job, self.workers)
