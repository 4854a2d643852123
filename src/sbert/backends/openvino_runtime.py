"""The OpenVINO backends: the `onnx` backend's fp32 graph (`openvino`) or NNCF's int8 of it (`openvino-int8`).

`openvino` compiles the cached fp32 graph for the CPU; `openvino-int8` compiles a static int8
model that NNCF quantized from it.

Same export, cache, manifest and rebuild as the ONNX Runtime backends (the graph is theirs); the
compiled blobs are cached by OpenVINO itself beside the graph. The int8 model is calibrated on
the same sentences as `onnx-int8` (backends/calibration.py) with NNCF's transformer preset
(SmoothQuant, activations quantized with fixed ranges, softmax and LayerNorm left in float).
The precision hint is always explicit: OpenVINO alone picks bf16 on a CPU that has it, which
would change outputs silently. On the CPU, one single-threaded stream per core, fed from threads,
as the other CPU backends.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sbert import layout
from sbert.backends.base import Chain, Rows, run_threaded
from sbert.backends.onnx_runtime import ONNX_BATCH_TOKENS, check_against_torch, open_checked
from sbert.backends.smoothing import Feed
from sbert.errors import BackendError, first_line
from sbert.modules import Features

HINTS = {torch.float32: "f32", torch.bfloat16: "bf16"}


class OpenVinoBackend:
    """Runs the fp32 graph or its NNCF int8 model through OpenVINO; checked against torch on every start."""

    packed = False
    default_batch_tokens = ONNX_BATCH_TOKENS
    max_rows = 512

    def __init__(self, chain: Chain, device: torch.device, dtype: torch.dtype, name: str = "openvino") -> None:
        if device.type != "cpu":
            raise BackendError(f"backend {name!r} runs on the CPU here, not on {device}; use backend='torch'")
        if dtype not in HINTS or (name == "openvino-int8" and dtype != torch.float32):
            raise BackendError(f"backend {name!r} computes in {'fp32' if name.endswith('int8') else 'fp32 or bf16'}, "
                               f"not {dtype}")  # fmt: skip
        self.name, self.chain, self.precision = name, chain, HINTS[dtype]
        self.exact = name == "openvino" and self.precision == "f32"  # bf16 and int8 are held to direction
        self.workers = torch.get_num_threads()
        self._local = threading.local()

        def start(path: Path) -> None:
            self.path = path
            self.compiled = compile_graph(path, self.precision, self.workers)
            self.input_names = [port.get_any_name() for port in self.compiled.inputs]
            check_against_torch(chain, self)

        # The onnx backend's fp32 graph (or the int8 model made from it), rebuilt once if it fails.
        open_checked(chain, "onnx" if name == "openvino" else name, start)

    def embed(self, features: Features) -> torch.Tensor:
        """Sentence embeddings (B, dim) for padded token features, on this thread's infer request."""
        request = getattr(self._local, "request", None)
        # A request belongs to one compiled model: after a rebuild (or a swap) a thread makes a new one.
        if request is None or self._local.model is not self.compiled:
            request = self._local.request = self.compiled.create_infer_request()
            self._local.model = self.compiled
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


def quantize_openvino(source: Path, target: Path, feeds: Sequence[Feed]) -> None:
    """NNCF's static int8 of the fp32 graph at `source`, calibrated on `feeds`, saved atomically as `target`."""
    try:
        import nncf
    except ImportError as e:
        need = "backend 'openvino-int8' needs nncf to quantize: pip install 'sbert[openvino]'"
        raise BackendError(f"{need} ({e})") from None
    import openvino

    nncf.set_log_level(logging.ERROR)  # its INFO lines and warnings about the subset size
    model = openvino.Core().read_model(str(source))
    try:
        quantized = nncf.quantize(model, nncf.Dataset(list(feeds)), model_type=nncf.ModelType.TRANSFORMER,
                                  subset_size=len(feeds))  # fmt: skip
    except Exception as e:  # NNCF raises its own error types
        raise BackendError(f"{source}: NNCF could not quantize the graph ({first_line(e)})") from None
    with layout.atomic_directory(target.parent) as tmp:
        openvino.save_model(quantized, str(tmp / target.name), compress_to_fp16=False)
