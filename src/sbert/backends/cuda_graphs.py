"""The packed forward replayed from CUDA graphs: a batch is one graph launch instead of a launch per kernel.

A small encoder's batch is 130-230 kernels of a few microseconds each, and the host's time to launch them is
what the device waits on. Here each bucket of backends/graph_buckets.py is captured once per model (after a
warm-up on a side stream, all graphs sharing one memory pool) over static input buffers: the packed ids,
positions and cumulative lengths, with the bucket's longest row as the attention's bound. A batch padded to
its bucket is copied into those buffers and the graph replayed; its real rows' vectors are copied out (the
next replay overwrites the output). Only the varlen kernels capture (flash-attn's, torch's varlen_attn):
they read the lengths from the device. `SBERT_CUDA_GRAPHS=1` turns this on.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from sbert.backends.graph_buckets import Bucket, Fitted, fit, padded_rows, plan_buckets
from sbert.backends.packed_chain import packed_chain_forward
from sbert.backends.packing import PackedBatch, pack
from sbert.modules.base import Module
from sbert.vectors.positions import Positions

CAPTURABLE = frozenset({"flash_attn", "torch"})  # varlen kernels with no host read of the lengths
ENV = "SBERT_CUDA_GRAPHS"


def graphs_wanted(kernel: str | None, device: torch.device) -> bool:
    """Whether to replay from graphs: asked for (SBERT_CUDA_GRAPHS=1), on CUDA, with a capturable kernel."""
    return os.environ.get(ENV) == "1" and device.type == "cuda" and kernel in CAPTURABLE


@dataclass(frozen=True)
class GraphBatch:
    """A batch padded to its bucket, packed on the host, and how many of its rows are real."""

    fitted: Fitted
    batch: PackedBatch
    rows: int


class GraphedForward:
    """Captured packed forwards of one model copy, one per (bucket, prompt skip), replayed for fitted batches."""

    def __init__(self, modules: Sequence[Module], device: torch.device, budget: int, max_rows: int,
                 max_len: int, positions: Positions, filler_id: int) -> None:  # fmt: skip
        self.modules, self.device, self.positions, self.filler_id = modules, device, positions, filler_id
        self.buckets = plan_buckets(budget, max_rows, max_len)
        self._graphs: dict[tuple[Bucket, int], tuple[torch.cuda.CUDAGraph, PackedBatch, Tensor]] = {}
        self._pool: Any = None  # the first capture's memory pool, which later captures share

    def prepare(self, rows: Sequence[Sequence[int]], pin: bool) -> GraphBatch | None:
        """The batch padded to its bucket and packed on the host (None: it fits no bucket, run it eagerly)."""
        fitted = fit(self.buckets, [len(r) for r in rows])
        if fitted is None:
            return None
        padded = pack(padded_rows(rows, fitted.fillers, self.filler_id), self.positions, pin=pin)
        return GraphBatch(fitted, padded, len(rows))

    def run(self, host: GraphBatch, skip: int = 0) -> Tensor:
        """The real rows' sentence embeddings of a padded batch, by replaying its bucket's graph."""
        bucket = host.fitted.bucket
        graph, static, out = self._graphs.get((bucket, skip)) or self._capture(bucket, skip)
        for target, source in ((static.input_ids, host.batch.input_ids), (static.position_ids, host.batch.position_ids),
                               (static.cu_seqlens, host.batch.cu_seqlens)):  # fmt: skip
            target.copy_(source, non_blocking=True)
        graph.replay()
        return out[: host.rows].clone()

    def _capture(self, bucket: Bucket, skip: int) -> tuple[torch.cuda.CUDAGraph, PackedBatch, Tensor]:
        """Capture the bucket's forward over static buffers (a well-formed layout of filler rows to start)."""
        fillers = [bucket.tokens // bucket.rows] * bucket.rows
        fillers[-1] += bucket.tokens - sum(fillers)
        layout = pack(padded_rows([], fillers, self.filler_id), self.positions)
        ids, positions, cu = (t.to(self.device) for t in (layout.input_ids, layout.position_ids, layout.cu_seqlens))
        static = PackedBatch(ids, positions, cu, max_len=bucket.max_len, min_len=1)
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.inference_mode(), torch.cuda.stream(side):  # lazy initialisations happen outside the capture
            for _ in range(2):
                packed_chain_forward(self.modules, static, skip)
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.inference_mode(), torch.cuda.graph(graph, pool=self._pool):
            out = packed_chain_forward(self.modules, static, skip)
        self._pool = graph.pool()
        self._graphs[(bucket, skip)] = (graph, static, out)
        return graph, static, out
