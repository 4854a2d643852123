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

In fp32 and int8 the graph is compiled twice: batches up to SHORT_WIDTHS tokens wide run on a
compile with OpenVINO's "snippets" off. Its fused attention kernel (a snippet) costs by sentence and
head more than by token and runs ragged widths slowly, so short batches ran 5-13% faster without
it; wide ones need it (a 512-token sentence took 1.5x as long without).
`benchmarks/speed/openvino_widths.py` measures both by width and the encode each way. The second
compile holds its own copy of the weights (MiniLM: +138 MB fp32, +91 MB int8; a 2.4 GB decoder:
+3.6 GB), so it is made only for models whose weights are under TWO_COMPILES_MAX_BYTES (512 MiB:
MiniLM and BERT-base keep it; large encoders and decoders compile once, as bounded memory matters
more there than 5-13% on short batches). SBERT_OPENVINO_SHORT_WIDTH sets the width for any model
(0: one compile, snippets everywhere).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sbert.backends.base import LARGE_WEIGHTS_BYTES, Chain, Rows, refuse_prompt_skip, run_threaded, weight_bytes
from sbert.backends.onnx_runtime import ONNX_BATCH_TOKENS, Reference, check_against_torch, open_checked
from sbert.backends.smoothing import Feed
from sbert.errors import BackendError, first_line
from sbert.formats import layout
from sbert.install_hint import install_hint
from sbert.modules import Features

HINTS = {torch.float32: "f32", torch.bfloat16: "bf16"}
# The widest batch (in tokens) that runs on the compile without snippets: the crossovers measured
# on a 2-core AVX512-VNNI Xeon (int8 faster without up to 24 tokens, slower from 32; fp32 faster
# up to 64, slower from 96).
SHORT_WIDTHS = {"openvino": 64, "openvino-int8": 24}
SHORT_WIDTH_ENV = "SBERT_OPENVINO_SHORT_WIDTH"
TWO_COMPILES_MAX_BYTES = LARGE_WEIGHTS_BYTES  # torch weights above this compile once (each compile holds its own copy)


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
        self.short_width = short_width(name, weight_bytes(chain.modules))
        self._local = threading.local()

        def start(path: Path, reference: Reference) -> None:
            self.path = path
            # bf16 compiles without snippets: on an AMX Xeon (OpenVINO 2026.4) its fused bf16 kernels
            # answer NaN for every row (or corrupt the heap), the unfused ones agree with torch.
            self.compiled = compile_graph(path, self.precision, self.workers, snippets=self.precision != "bf16")
            two = self.precision == "f32" and self.short_width > 0
            self.short = compile_graph(path, self.precision, self.workers, snippets=False) if two else self.compiled
            self.input_names = [feed_name(port) for port in self.compiled.inputs]
            for model in dict.fromkeys((self.short, self.compiled)):  # both compiles meet the check
                check_against_torch(self, reference, functools.partial(self._embed_on, model))

        # The onnx backend's fp32 graph (or the int8 model made from it), rebuilt once if it fails.
        open_checked(chain, "onnx" if name == "openvino" else name, start, quantize=_quantize_nncf)

    def runs_without_snippets(self, width: int) -> bool:
        """Whether batches `width` tokens wide run on the compile without snippets (fp32 and int8)."""
        return width <= self.short_width

    def model_for(self, width: int) -> Any:
        """The compiled model that runs batches `width` tokens wide."""
        return self.short if self.runs_without_snippets(width) else self.compiled

    def infer(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        """The graph's output for one feed of input arrays, on this thread's request of the right compile."""
        return self._infer_on(self.model_for(int(feed["input_ids"].shape[1])), feed)

    def embed(self, features: Features) -> torch.Tensor:
        """Sentence embeddings (B, dim) for padded token features, on this thread's infer request."""
        return self._embed_on(self.model_for(features["input_ids"].shape[1]), features)

    def _embed_on(self, model: Any, features: Features) -> torch.Tensor:
        feed = {name: features[name].cpu().numpy() for name in self.input_names}
        return torch.from_numpy(self._infer_on(model, feed))

    def _infer_on(self, model: Any, feed: dict[str, np.ndarray]) -> np.ndarray:
        request = self._request(model)
        request.infer(feed)
        return np.array(request.get_output_tensor(0).data, dtype=np.float32)

    def _request(self, model: Any) -> Any:
        """This thread's infer request on `model`; requests on models since replaced are dropped."""
        # A request belongs to one compiled model: after a rebuild (or a swap) a thread makes a new one.
        pairs = [(m, r) for m, r in getattr(self._local, "pairs", []) if m is self.compiled or m is self.short]
        for owner, request in pairs:
            if owner is model:
                return request
        request = model.create_infer_request()
        self._local.pairs = [*pairs, (model, request)]
        return request

    def run(self, ids: Sequence[Sequence[int]], batches: list[list[int]], skip: int = 0) -> Iterator[Rows]:
        """(batch, vectors) in batch order, one batch per stream at a time."""
        refuse_prompt_skip(self.name, skip)

        def job(batch: list[int]) -> Rows:
            return batch, self.embed(self.chain.pad([ids[i] for i in batch])).numpy()

        yield from run_threaded(batches, job, self.workers)


def short_width(name: str, weights: int = 0) -> int:
    """The widest batch that runs without snippets: SBERT_OPENVINO_SHORT_WIDTH, else the measured default.

    The default is 0 (one compile) for models of `weights` bytes above TWO_COMPILES_MAX_BYTES.
    """
    value = os.environ.get(SHORT_WIDTH_ENV, "").strip()
    if not value:
        return SHORT_WIDTHS[name] if weights <= TWO_COMPILES_MAX_BYTES else 0
    if not value.isdigit():
        raise BackendError(f"{SHORT_WIDTH_ENV}={value!r}: expected a whole number of tokens (0: one compile)")
    return int(value)


def compile_graph(path: Path, precision: str, streams: int, snippets: bool = True, **extra: str) -> Any:
    """The graph at `path` compiled for the CPU: `streams` single-threaded streams, `precision` explicit.

    `snippets=False` turns off OpenVINO's own fused kernels (attention among them); `extra` adds
    plugin properties (PERF_COUNT="YES" for the profiler).
    """
    import openvino

    core = openvino.Core()
    core.set_property({"CACHE_DIR": str(blob_cache(path, snippets))})
    config = {"INFERENCE_PRECISION_HINT": precision, "NUM_STREAMS": str(streams),
              "INFERENCE_NUM_THREADS": str(streams), **({} if snippets else {"SNIPPETS_MODE": "DISABLE"}),
              **extra}  # fmt: skip
    try:
        # by path: a cached blob then loads without reading (and so mapping) the graph's weights to hash them
        return core.compile_model(str(path), "CPU", config)
    except Exception as e:  # OpenVINO raises its own RuntimeError subclasses
        raise BackendError(f"{path}: OpenVINO cannot compile the graph ({first_line(e)})") from None


def blob_cache(path: Path, snippets: bool) -> Path:
    """The folder OpenVINO keeps its compiled blobs of the graph at `path` in, one per version of the file.

    Compiled by path, OpenVINO keys a blob by the path and the file's size and time to the second: a
    graph exported again in place within the same second (a rebuild after a failed check) would get
    the old blob. The folder is named by the file's inode, nanosecond time and size instead (an
    export replaces the file atomically, so each version gets a new one); older versions' blobs go.
    OpenVINO's key also leaves SNIPPETS_MODE out: each mode has its own folder.
    """
    stat = path.stat()
    root = path.parent / ("openvino" if snippets else "openvino_no_snippets")
    here = root / f"{stat.st_ino}-{stat.st_mtime_ns}-{stat.st_size}"
    if root.is_dir():
        for old in root.iterdir():
            if old == here:
                continue
            if old.is_dir():  # the blobs of a replaced graph
                shutil.rmtree(old, ignore_errors=True)
            else:  # a blob of the flat layout earlier versions wrote
                old.unlink(missing_ok=True)
    return here


def _quantize_nncf(fp32: Path, target: Path, feeds: Sequence[Feed]) -> dict[str, object]:
    quantize_openvino(fp32, target, feeds)
    return {}


def quantize_openvino(source: Path, target: Path, feeds: Sequence[Feed], unsigned_inputs: bool = True) -> None:
    """NNCF's static int8 of the fp32 graph at `source`, calibrated on `feeds`, saved atomically as `target`.

    `unsigned_inputs=False` keeps NNCF's ranges as they come (benchmarks/speed/int8_variants.py compares).
    """
    try:
        import nncf
    except ImportError as e:
        need = f"backend 'openvino-int8' needs nncf to quantize: {install_hint('openvino')}"
        raise BackendError(f"{need} ({e})") from None
    import openvino

    nncf.set_log_level(logging.ERROR)  # its INFO lines and warnings about the subset size
    model = openvino.Core().read_model(str(source))
    try:
        quantized = nncf.quantize(model, nncf.Dataset(list(feeds)), model_type=nncf.ModelType.TRANSFORMER,
                                  subset_size=len(feeds))  # fmt: skip
    except Exception as e:  # NNCF raises its own error types
        raise BackendError(f"{source}: NNCF could not quantize the graph ({first_line(e)})") from None
    if unsigned_inputs:
        keep_inputs_unsigned(quantized)
    with layout.atomic_directory(target.parent) as tmp:
        openvino.save_model(quantized, str(tmp / target.name), compress_to_fp16=False)


def keep_inputs_unsigned(model: Any) -> int:
    """Move the zero point of every linear layer's input quantizer off level 128; returns how many moved.

    OpenVINO reads an 8-bit activation quantizer whose zero sits at level 128 (a range NNCF made
    nearly symmetric) as signed, and its int8 FullyConnected kernel takes unsigned inputs: such a
    layer fell back to a slower legacy kernel (6 of MiniLM's 36 layers). Raising the top of
    the range by 1/127 puts zero at level 127, still exact; the step grows by under 1%.
    """
    from openvino import opset13

    moved = 0
    for node in model.get_ops():
        bounds = _symmetric_bounds(node)
        if bounds is None or not all(_is_linear(t.get_node()) for t in node.output(0).get_target_inputs()):
            continue
        high = np.full(bounds.shape, -bounds.min() * 128 / 127, dtype=np.float32)
        for port in (2, 4):  # input_high and output_high: the quantizer passes the same range through
            node.input(port).replace_source_output(opset13.constant(high).output(0))
        moved += 1
    return moved


def _symmetric_bounds(node: Any) -> np.ndarray | None:
    """A 256-level quantizer's constant input_low, when its zero sits exactly at level 128 (else None)."""
    if node.get_type_name() != "FakeQuantize" or node.get_attributes()["levels"] != 256:
        return None
    ends = [node.input_value(port).get_node() for port in (1, 2, 3, 4)]
    if any(end.get_type_name() != "Constant" or end.get_data().size != 1 for end in ends):
        return None
    low, high, out_low, out_high = (float(end.get_data().ravel()[0]) for end in ends)
    # Only a quantizer that passes its range through (NNCF's activations): the fix moves both tops.
    if (low, high) != (out_low, out_high) or low >= 0 or abs(-low / (high - low) * 255 - 128) > 1e-3:
        return None
    return np.asarray(ends[0].get_data(), dtype=np.float32)


def _is_linear(node: Any) -> bool:
    """A MatMul on dequantized constant weights (NNCF's Multiply of a converted int8 constant)."""
    return bool(node.get_type_name() == "MatMul" and node.input_value(1).get_node().get_type_name() == "Multiply")


def feed_name(port: Any) -> str:
    """The model input a graph port takes, by its input name.

    An input that feeds a Cast directly ([CLS] pooling's mask) carries that node's output name too,
    and `get_any_name` may pick it.
    """
    names = port.get_names()
    for name in ("input_ids", "attention_mask", "token_type_ids", "pixel_values"):
        if name in names:
            return name
    return str(port.get_any_name())
