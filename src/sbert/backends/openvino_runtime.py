"""The OpenVINO backend (`openvino`): the `onnx` backend's cached fp32 graph, compiled by OpenVINO for the CPU.

Same export, cache, manifest and rebuild as the ONNX Runtime backends (the graph is theirs); the
compiled blobs are cached by OpenVINO itself in `onnx/openvino/`. The precision hint is always
explicit: OpenVINO alone picks bf16 on a CPU that has it, which would change outputs silently.
On the CPU, one single-threaded stream per core, fed from threads, as the other CPU backends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sbert.backends.base import Chain, Rows, run_threaded
from sbert.backends.onnx_runtime import ONNX_BATCH_TOKENS, check_against_torch, open_checked
from sbert.errors import BackendError, first_line
from sbert.modules import Features

HINTS = {torch.float32: "f32", torch.bfloat16: "bf16"}


class OpenVinoBackend:
    """Runs the fp32 ONNX graph through OpenVINO; checked against the torch path on every start."""

    name = "openvino"
    packed = False
    default_batch_tokens = ONNX_BATCH_TOKENS
    max_rows = 512

    def __init__(self, chain: Chain, device: torch.device, dtype: torch.dtype) -> None:
        if device.type != "cpu":
            raise BackendError(f"backend 'openvino' runs on the CPU here, not on {device}; use backend='torch'")
        if dtype not in HINTS:
            raise BackendError(f"backend 'openvino' computes in fp32 or bf16, not {dtype}")
        self.chain, self.precision = chain, HINTS[dtype]
        self.exact = self.precision == "f32"  # bf16 is held to direction, as int8
        self.workers = torch.get_num_threads()
        self._local = threading.local()

        def start(path: Path) -> None:
            self.path = path
            self.compiled = compile_graph(path, self.precision, self.workers)
            self.input_names = [port.get_any_name() for port in self.compiled.inputs]
            check_against_torch(chain, self)

        open_checked(chain, "onnx", start)  # the onnx backend's fp32 graph, rebuilt once if it fails

    def embed(self, features: Features) -> torch.Tensor:
        """Sentence embeddings (B, dim) for padded token features, on this thread's infer request."""
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self.compiled.create_infer_request()
        feed = {name: features[name].cpu().numpy() for name in self.input_names}
        request.infer(feed)
        return torch.from_numpy(np.array(request.get_output_tensor(0).data, dtype=np.float32))

    def run(self, ids: Sequence[Sequence[int]], batches: list[list[int]]) -> Iterator[Rows]:
        """(batch, vectors) in batch order, one batch per stream at a time."""

        def job(batch: list[int]) -> Rows:
            return batch, self.embed(self.chain.pad([ids[i] for i in batch])).numpy()

        yield from run_threaded(batches, job, self.workers)


def compile_graph(path: Path, precision: str, streams: int) -> Any:
    """The graph at `path` compiled for the CPU: `streams` single-threaded streams, `precision` explicit."""
    import openvino

    core = openvino.Core()
    core.set_property({"CACHE_DIR": str(path.parent / "openvino")})
    config = {"INFERENCE_PRECISION_HINT": precision, "NUM_STREAMS": str(streams),
              "INFERENCE_NUM_THREADS": str(streams)}  # fmt: skip
    try:
        return core.compile_model(core.read_model(str(path)), "CPU", config)
    except Exception as e:  # OpenVINO raises its own RuntimeError subclasses
        raise BackendError(f"{path}: OpenVINO cannot compile the graph ({first_line(e)})") from None
