"""The CPU torch backend: smart batches, one single-threaded batch per core at a time, packed where mostly padding.

A packed batch runs the linear layers on its real tokens only and attention per sentence (varlen.grid_sdpa);
a padded one pays for every pad, which a batch of unsorted short texts (a server's merged requests) is
mostly made of: MiniLM on random 16-sentence batches cost 11.4 ms a sentence padded and 5.6 packed on one
core. Length-sorted batches (offline encode) have little padding and stay padded. Encoders that cannot pack
(MPNet's relative positions, ...) always run padded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch

from sbert.adapters.peft_io import has_adapter
from sbert.backends import varlen
from sbert.backends.base import Chain, Rows, cast_copy, embed_padded, is_large, lane_workers, run_threaded
from sbert.backends.lean_bert import lean_encoder
from sbert.backends.packed_chain import (
    packed_chain_forward,
    packed_token_embeddings,
    position_numbering,
    switch_to_packed,
)
from sbert.backends.packing import PLAIN, PackedBatch, pack
from sbert.backends.pages import trim_heap
from sbert.modules import Module, Transformer
from sbert.vectors.batching import even_runs

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


# A lone batch is cut for the cores only when each part keeps this many real tokens; a smaller one runs whole
# in the caller's thread (its intra-op threads: a single query's latency). Cutting trades CPU for time: MiniLM,
# random STS sentences, 16-text groups: cut 8.4 ms CPU (5.1 wall) a sentence, whole on one thread 7.0 (7.1),
# whole on two intra-op threads 9.6 (4.9); 4-text groups: cut 14.2 (9.1), one thread 8.8 (8.8), two intra-op
# threads 14.1 (7.1). Served (16 one-text clients, 2 cores), cutting at 48 tokens a part gave 141 texts/s at
# 9.3 ms of server CPU a text; one thread for groups under 128 tokens a part 120 texts/s at 8.3 ms.
SPLIT_MIN_TOKENS = 48
# Through the transformers modules, a batch runs packed when more than this share of its padded size is
# padding: a length-sorted batch (offline encode) has little and runs padded (packing costs index work per
# layer), a server's merged group of random short requests is about half padding (16 random STS sentences:
# 47%). Served (16 one-text clients, 2 cores): 157.7 texts/s at this threshold, 141.9 at 0.2, 140.9 with
# every batch packed (docs/serving.md). Where the lean forward runs (lean_bert.py), every batch packs: offline
# encode of the STS test sentences cost 3.35 ms of CPU a text packed and lean against 3.87 padded through the
# modules (2-core AMD EPYC Zen 4; `python benchmarks/speed/lean_offline.py`, docs/speed.md).
PACK_MIN_PADDING = 0.1


def padding_share(rows: Sequence[Sequence[int]]) -> float:
    """The share of a padded batch (rows x longest row) that would be padding."""
    longest = max((len(r) for r in rows), default=0)
    return 1.0 - sum(len(r) for r in rows) / max(1, longest * len(rows))


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
    return even_runs(rows, lengths, parts)


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


def lean_forward(packed: tuple[Module, ...], kernel: str) -> Callable[[PackedBatch], torch.Tensor] | None:
    """The lean forward of the packed encoder (lean_bert.py) where it matches its modules, else None.

    MiniLM, random STS sentences packed as a server's groups are, one thread, 2-core AMD EPYC (Zen 4): the
    transformers modules cost 2.10x the lean forward's CPU at 1 sentence, 1.28x at 8, 1.18x at 16 and 1.16x
    at 32 (benchmarks/speed/lean_forward.py, docs/speed.md).
    """
    transformer = packed[0]
    # A large model keeps to its modules: the projections are copies (oneDNN's layout), its layers' weights
    # once more, against a large model's memory bound of 1.5x its weights (BERT-large: 1.2 GB).
    if not isinstance(transformer, Transformer) or transformer.packed_output != "token_states" or is_large(packed):
        return None
    modules = lambda batch: packed_token_embeddings(transformer, batch)  # noqa: E731 (the probe's reference)
    return lean_encoder(transformer.auto_model, varlen.KERNELS[kernel], modules, position_numbering(transformer))


class TorchCpuBackend:
    """Runs the chain in torch on the CPU (or any device without a pipeline of its own)."""

    name = "torch"
    packable = False  # set per instance where the encoder packs (torch-int8's subclass builds its own modules)
    default_batch_tokens = CPU_BATCH_TOKENS
    max_rows = MAX_ROWS

    def __init__(self, chain: Chain, device: torch.device, dtype: torch.dtype = torch.float32) -> None:
        self.chain, self.device, self.dtype = chain, device, dtype
        self.modules = cast_copy(chain.modules, device, dtype)
        self.packable = device.type == "cpu" and packs_on_cpu(chain)
        self._packed_modules: tuple[Module, ...] | None = None  # switched to varlen attention on first need
        self._positions = PLAIN  # how the packed batches number positions (set with the packed modules)
        self._lean: Callable[[PackedBatch], torch.Tensor] | None = None  # lean_bert's forward, where it matches
        self._switch = threading.Lock()
        self.workers = torch.get_num_threads() if device.type == "cpu" else 1
        self.trim = trims_heap(self.modules, device)
        self.default_batch_tokens = cpu_batch_tokens(self.modules)

    def embed(self, rows: Sequence[Sequence[int]], skip: int = 0) -> np.ndarray:
        """float32 vectors (B, dim) of one batch of token id lists (the first `skip` positions not pooled)."""
        # The packed copy is made outside inference mode: its parameters stay ordinary tensors.
        packed = self.packed_modules() if self.packable else None
        if packed is not None and self._lean is None and padding_share(rows) <= PACK_MIN_PADDING:
            packed = None  # through the modules, a batch with little padding costs less padded
        with torch.inference_mode():
            if packed is not None:
                return packed_chain_forward(packed, pack(rows, self._positions), skip, self._lean).float().numpy()
            return embed_padded(self.modules, self.chain.pad(rows), self.device, skip).float().cpu().numpy()

    @property
    def packed(self) -> bool:
        """Whether batches are planned by real tokens (the encoder packs) rather than by padded size.

        Where the encoder packs, a batch mostly padding runs packed and costs its real tokens, so a
        server's merged group of random short requests fits one batch instead of two or three padded
        ones, each paying a forward's fixed cost (MiniLM, calls of 16 random STS sentences on one thread:
        1.12x offline's CPU a sentence against 1.19x; benchmarks/speed/small_calls.py --threads 1). A
        length-sorted batch (offline encode) has little padding either way and still runs padded.
        """
        return self.packable and self.packed_modules() is not None

    def packed_modules(self) -> tuple[Module, ...] | None:
        """The chain with its encoder switched to varlen attention (made once), or None where it cannot pack."""
        with self._switch:
            if self.packable and self._packed_modules is None:
                modules, kernel = switch_to_packed(self.chain, self.modules, self.device, self.dtype, keep=True)
                self._packed_modules, self.packable = (modules, True) if kernel is not None else (None, False)
                self._positions = position_numbering(self.chain.transformer) if kernel is not None else PLAIN
                if self._packed_modules is not None and kernel is not None:
                    self._lean = lean_forward(self._packed_modules, kernel)
            return self._packed_modules

    def run(self, ids: Sequence[Sequence[int]], batches: list[list[int]], skip: int = 0) -> Iterator[Rows]:
        """(batch, vectors) in batch order, `workers` batches at a time from threads."""

        def job(batch: list[int]) -> Rows:
            vectors = self.embed([ids[i] for i in batch], skip)
            if self.trim:
                trim_heap()
            return batch, vectors

        workers = lane_workers(self.workers)
        yield from run_threaded(per_core(batches, [len(r) for r in ids], workers), job, workers)
