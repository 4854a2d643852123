"""The GPU torch backend: weights cast once, padding-free batches, host work overlapped with the GPU.

A producer thread packs the next batches into pinned host memory (a bounded queue holds a few),
the caller's thread copies each one without blocking and launches the chain, and the vectors
stay on the GPU until a block of rows is copied back at once: the host never sits between two
kernels of one batch. Architectures that cannot be packed run length-bucketed padded batches
through the same pipeline. It also runs on the CPU, which is how CI tests it.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

from sbert.backends.base import Chain, Rows, cast_copy, embed_padded
from sbert.backends.cuda_graphs import GraphBatch, GraphedForward, graphs_wanted
from sbert.backends.packed_chain import packed_chain_forward, position_numbering, switch_to_packed
from sbert.backends.packing import PackedBatch, pack
from sbert.device import no_cudnn_attention
from sbert.errors import DeviceError
from sbert.modules import Features
from sbert.vectors.batching import packed_batches, token_batches

log = logging.getLogger(__name__)

PREFETCH = 4  # batches packed ahead of the GPU
BLOCK_ROWS = 1 << 16  # rows gathered on the GPU before one copy back to the host
MAX_ROWS = 1 << 14
# The budget's bounds: below 4k tokens a GPU idles between kernels, and 64k-token batches
# already reached the best throughput measured on an H100 (docs/speed.md).
MIN_BUDGET, MAX_BUDGET = 4096, 1 << 16
MEMORY_SHARE = 0.4  # of free GPU memory that one batch's activations may take


def memory_budget(device: torch.device, config: Any, dtype: torch.dtype) -> int:
    """Tokens per batch that fit in a share of the device's free memory (a fixed size on CPU)."""
    if device.type != "cuda":
        return MIN_BUDGET
    free, _ = torch.cuda.mem_get_info(device)
    hidden = int(getattr(config, "hidden_size", 768))
    inner = int(getattr(config, "intermediate_size", 4 * hidden))
    # The widest live activations of a layer per token (the FFN's inner width plus a handful of
    # hidden-wide tensors), doubled for the allocator's slack.
    per_token = 2 * (inner + 6 * hidden) * torch.finfo(dtype).bits // 8
    budget = int(free * MEMORY_SHARE) // max(per_token, 1)
    return max(MIN_BUDGET, min(MAX_BUDGET, budget // 1024 * 1024))


class CudaBackend:
    """Torch on a GPU: bf16/fp16/fp32 weights, packed varlen attention, a prefetching pipeline."""

    name = "torch"
    max_rows = MAX_ROWS
    workers = 1  # one batch on the device at a time

    def __init__(self, chain: Chain, device: torch.device, dtype: torch.dtype) -> None:
        self.chain, self.device, self.dtype = chain, device, dtype
        self.modules = cast_copy(chain.modules, device, dtype)
        self.pin = device.type == "cuda"
        self.positions = position_numbering(chain.transformer)
        self.kernel = self._pick_attention()
        self.packed = self.kernel is not None
        # Planned batches hold this many tokens, and larger ones (a caller's batch_tokens) are cut to
        # it; a CUDA out-of-memory lowers it for good.
        self.default_batch_tokens = memory_budget(device, chain.transformer.auto_model.config, dtype)
        self._oom_noted = False
        self.graphs = self._graphs() if graphs_wanted(self.kernel, device) else None

    def _pick_attention(self) -> str | None:
        """Switch the copy to varlen attention; None (and one log line) when it must stay padded."""
        self.modules, key = switch_to_packed(self.chain, self.modules, self.device, self.dtype)
        return key

    def _graphs(self) -> GraphedForward:
        """Captured forwards over the engine's token budget (SBERT_CUDA_GRAPHS=1; backends/cuda_graphs.py)."""
        transformer = self.chain.transformer
        filler = getattr(transformer.tokenizer, "pad_token_id", None) or 0
        return GraphedForward(self.modules, self.device, self.default_batch_tokens, MAX_ROWS,
                              transformer.max_seq_length, self.positions, filler)  # fmt: skip

    def prepare(self, rows: Sequence[Sequence[int]]) -> PackedBatch | Features | GraphBatch:
        """Host-side work for one batch: packed (or padded) ids, pinned for an async copy.

        Padded to a graph's bucket when graphs replay the forward and the batch fits one.
        """
        graphed = self.graphs.prepare(rows, self.pin) if self.graphs is not None else None
        if graphed is not None:
            return graphed
        if self.packed:
            return pack(rows, self.positions, pin=self.pin)
        features = self.chain.pad(rows)
        return {k: v.pin_memory() for k, v in features.items()} if self.pin else features

    def forward(self, host: PackedBatch | Features | GraphBatch, skip: int = 0) -> torch.Tensor:
        """Sentence embeddings (B, dim) on the device, in the working dtype (the first `skip` positions not pooled)."""
        if isinstance(host, GraphBatch):
            assert self.graphs is not None
            return self.graphs.run(host, skip)
        with torch.inference_mode():
            if isinstance(host, PackedBatch):
                return packed_chain_forward(self.modules, host.to(self.device, non_blocking=True), skip)
            with no_cudnn_attention(self.device.type):  # a cuDNN graph per padded shape (sbert.device)
                return embed_padded(self.modules, host, self.device, skip)

    def run(self, ids: Sequence[Sequence[int]], batches: list[list[int]], skip: int = 0) -> Iterator[Rows]:
        """Embed every batch; yields (rows, vectors) once per block of rows."""
        rows: list[int] = []
        parts: list[torch.Tensor] = []
        for batch, host in prefetch(self._fitted(ids, batches), lambda b: self.prepare([ids[i] for i in b])):
            for done, vectors in self._run_batch(ids, batch, host, skip):
                rows.extend(done)
                parts.append(vectors)
            if len(rows) >= BLOCK_ROWS:
                yield rows, gather(parts)
                rows, parts = [], []
        if rows:
            yield rows, gather(parts)

    def _fitted(self, ids: Sequence[Sequence[int]], batches: list[list[int]]) -> Iterator[list[int]]:
        """The planned batches, re-cut to the budget as it stands when the producer thread reaches each.

        After an out-of-memory error lowers the budget, the batches planned before it are split
        here, ahead of the GPU, rather than re-packed on the caller's thread between kernels.
        """
        for batch in batches:
            if len(batch) > 1 and self._tokens(ids, batch) > self.default_batch_tokens:
                yield from self._cut(ids, batch)
            else:
                yield batch

    def _cut(self, ids: Sequence[Sequence[int]], batch: list[int]) -> list[list[int]]:
        """`batch` in runs that fit the budget (at least two when it holds more than one row and does not)."""
        lengths = [len(ids[i]) for i in batch]
        cut = packed_batches if self.packed else token_batches
        return [[batch[j] for j in run] for run in cut(range(len(batch)), lengths, self.default_batch_tokens, MAX_ROWS)]

    def _run_batch(
        self, ids: Sequence[Sequence[int]], batch: list[int], host: Any, skip: int = 0
    ) -> list[tuple[list[int], Any]]:
        """One batch, re-cut to a lowered budget (the budget halved for good) on a CUDA out-of-memory."""
        if len(batch) > 1 and self._tokens(ids, batch) > self.default_batch_tokens:
            return self._in_runs(ids, batch, skip)  # prepared ahead, before an out-of-memory lowered the budget
        try:
            return [(batch, self.forward(host, skip))]
        except torch.OutOfMemoryError:
            pass
        # Recovery starts only once the handler is left: inside it, the traceback would keep the
        # failed forward's activations alive, so empty_cache could not free them for the retries.
        if len(batch) == 1:
            raise DeviceError(
                f"{self.device}: out of memory on a single input of {len(ids[batch[0]])} tokens; "
                "lower max_seq_length or free GPU memory"
            )
        self._note_oom(self._tokens(ids, batch), len(batch))
        return self._in_runs(ids, batch, skip)

    def _in_runs(self, ids: Sequence[Sequence[int]], batch: list[int], skip: int) -> list[tuple[list[int], Any]]:
        out = []
        for part in self._cut(ids, batch):
            out.extend(self._run_batch(ids, part, self.prepare([ids[i] for i in part]), skip))
        return out

    def _tokens(self, ids: Sequence[Sequence[int]], batch: list[int]) -> int:
        lengths = [len(ids[i]) for i in batch]
        return sum(lengths) if self.packed else max(lengths) * len(batch)

    def _note_oom(self, tokens: int, rows: int) -> None:
        # The engine's planning (encode) and the server's group size both read this budget, so
        # later batches are cut to fit before they reach the GPU.
        self.default_batch_tokens = max(1, min(self.default_batch_tokens, tokens) // 2)
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        if not self._oom_noted:
            log.warning(
                "%s: out of memory on a batch of %d tokens (%d rows); batch budget halved to %d and retried",
                self.device, tokens, rows, self.default_batch_tokens,
            )  # fmt: skip
            self._oom_noted = True


def gather(parts: list[torch.Tensor]) -> np.ndarray:
    """One copy back to the host for a block of batches' vectors, as float32."""
    return torch.cat(parts).float().cpu().numpy()


def prefetch(batches: Iterable[list[int]], prepare: Any) -> Iterator[tuple[list[int], Any]]:
    """(batch, prepare(batch)) from a producer thread that stays up to PREFETCH batches ahead.

    An error in the producer is raised here; leaving the loop early stops the producer.
    """
    box: queue.Queue[tuple[list[int], Any] | BaseException | None] = queue.Queue(maxsize=PREFETCH)
    stop = threading.Event()

    def put(item: tuple[list[int], Any] | BaseException | None) -> None:
        while not stop.is_set():
            try:
                box.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def produce() -> None:
        try:
            for batch in batches:
                if stop.is_set():
                    return
                put((batch, prepare(batch)))
        except BaseException as e:  # handed to the consumer, which raises it
            put(e)
        put(None)

    thread = threading.Thread(target=produce, name="sbert-prefetch", daemon=True)
    thread.start()
    try:
        while (item := box.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()
