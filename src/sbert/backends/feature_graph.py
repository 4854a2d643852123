"""One named feature of a chain as one ONNX graph: a multi-vector model's token vectors, SPLADE's rows, images.

Exported once, cached by a digest of the weights, run on ONNX Runtime or OpenVINO, checked against torch.

The dense backends (onnx_runtime.py, openvino_runtime.py) end their graph at the sentence vector
and add batching, smoothing and calibration for it; this engine ends at any feature the chain
writes, per token (B, T, dim) or per row (B, V) (an image-text model's image vectors from its pixels),
and leaves batching to the kind's engine. The
int8 variants are ONNX Runtime's dynamic quantization of every MatMul's weights (per channel) and
OpenVINO's compile of that graph; both are checked against torch by the cosine of every output row.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from sbert.backends.base import Chain, run_chain
from sbert.backends.cache import cache_dir, read_manifest, write_manifest
from sbert.backends.export import OPSET, eager_attention, quantize_int8, temp_beside
from sbert.device import check_cpu_int8, int8_reduce_range
from sbert.errors import BackendError, first_line
from sbert.install_hint import install_hint
from sbert.modules import Features, Module

RUNTIMES = ("onnx", "onnx-int8", "openvino", "openvino-int8")
MAX_ABS_DIFF = 1e-3  # fp32 graph against torch: unit-length token vectors, SPLADE weights of order 1-10
MIN_INT8_COSINE = 0.98  # int8 graph: the worst output row's cosine to torch on the probes


class FeatureGraph(nn.Module):
    """Positional tensors -> one named feature of the chain: what `torch.onnx.export` traces."""

    def __init__(self, modules: Sequence[Module], names: tuple[str, ...], output: str) -> None:
        super().__init__()
        self.chain, self.names, self.output = nn.ModuleList(modules), names, output

    def forward(self, *tensors: Tensor) -> Tensor:
        """The output feature of a padded batch: (B, T, dim) or (B, dim)."""
        return run_chain(list(self.chain), dict(zip(self.names, tensors, strict=True)))[self.output]  # type: ignore[arg-type]


def export_feature(chain: Chain, sample: Features, output: str, per_token: bool, path: Path) -> None:
    """Trace the chain on the CPU into `path`, atomically; `sample` is a padded batch with two lengths."""
    if "pixel_values" in sample:  # an image tower: pixels of the processor's fixed size, any number of images
        names: tuple[str, ...] = ("pixel_values",)
        dynamic = {"pixel_values": {0: "batch"}, output: {0: "batch"}}
    else:
        names = tuple(n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample)
        axes = {0: "batch", 1: "tokens"} if per_token else {0: "batch"}
        dynamic = {n: {0: "batch", 1: "tokens"} for n in names} | {output: axes}
    graph = FeatureGraph(chain.modules, names, output).to("cpu").eval()
    try:
        with eager_attention(chain), temp_beside(path) as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(graph, tuple(sample[n].cpu() for n in names), str(tmp), dynamo=False,
                              input_names=list(names), output_names=[output], dynamic_axes=dynamic,
                              opset_version=OPSET, do_constant_folding=True)  # fmt: skip
    except (RuntimeError, ValueError, TypeError) as e:
        raise BackendError(f"ONNX export failed: {first_line(e)}") from None


def open_feature_graph(
    chain: Chain, backend: str, output: str, probes: Features, dtype: torch.dtype = torch.float32, *,
    per_token: bool = True, stem: str | None = None,
) -> FeatureGraphEngine:  # fmt: skip
    """The checked graph engine of `chain`'s `output` on `backend`: what every kind's graph backends ask for.

    One line for a missing extra, a precision other than fp32, or int8 on a CPU without int8 instructions.
    """
    if backend not in RUNTIMES:
        raise BackendError(f"unknown backend {backend!r}; known: torch, {', '.join(RUNTIMES)}")
    extra = "openvino" if backend.startswith("openvino") else "onnx"
    try:  # the graph runtimes are extras (the graph is exported through ONNX for both)
        import onnxruntime  # noqa: F401

        if extra == "openvino":
            import openvino  # noqa: F401
    except ImportError as e:
        raise BackendError(f"backend {backend!r} needs the {extra} extra: {install_hint(extra)} ({e})") from None
    if dtype != torch.float32:
        raise BackendError(f"backend {backend!r} runs its own fp32/int8 graph; precision applies to torch")
    if backend.endswith("-int8"):
        check_cpu_int8(backend)
    folder = cache_dir(chain.source_dir, chain.digest())
    return FeatureGraphEngine(chain, backend, output, folder, probes, per_token=per_token, stem=stem)


class FeatureGraphEngine:
    """The cached graph of `chain`'s `output` on `runtime` (onnx, onnx-int8, openvino, openvino-int8).

    `per_token`: the output has a token axis, and only real (unpadded) tokens are checked.
    `stem` names the cached files (default: the output's name).
    """

    def __init__(
        self, chain: Chain, runtime: str, output: str, folder: Path, probes: Features, *,
        per_token: bool = True, stem: str | None = None,
    ) -> None:  # fmt: skip
        self.runtime, self.output, self.per_token = runtime, output, per_token
        self.path = _cached_graph(chain, runtime, output, folder, probes, per_token, stem or output)
        if runtime.startswith("openvino"):
            from sbert.backends.openvino_runtime import compile_graph, feed_name

            compiled = compile_graph(self.path, "f32", torch.get_num_threads(), NUM_STREAMS="1")
            self.request: Any = compiled.create_infer_request()
            self.names = [feed_name(port) for port in compiled.inputs]
        else:
            from sbert.backends.onnx_runtime import make_session

            self.session = make_session(self.path, torch.device("cpu"))
            self.names = [i.name for i in self.session.get_inputs()]
        self._check(chain, probes)

    def embed(self, features: Features) -> np.ndarray:
        """float32 output of a padded batch: (B, T, dim) per token, (B, dim) per row."""
        feed = {name: features[name].cpu().numpy() for name in self.names}
        if self.runtime.startswith("openvino"):
            self.request.infer(feed)
            return np.array(self.request.get_output_tensor(0).data, dtype=np.float32)
        return np.asarray(self.session.run(None, feed)[0], dtype=np.float32)

    def _check(self, chain: Chain, probes: Features) -> None:
        """Refuse a graph whose rows differ from torch's (fp32: 1e-3; int8: cosine 0.98)."""
        with torch.inference_mode():
            want = run_chain(chain.modules, {k: v.to(chain.device) for k, v in probes.items()})[self.output]
        want_np, got = want.float().cpu().numpy(), self.embed(probes)
        if self.per_token:  # padding positions are never read, so they are not compared
            real = probes["attention_mask"].bool().numpy()
            want_np, got = want_np[real], got[real]
        if self.runtime.endswith("int8"):
            norms = np.maximum(np.linalg.norm(got, axis=-1) * np.linalg.norm(want_np, axis=-1), 1e-12)
            cos = (got * want_np).sum(-1) / norms
            if not np.isfinite(cos).all() or cos.min() < MIN_INT8_COSINE:
                fp32 = self.runtime.removesuffix("-int8")
                raise BackendError(f"{self.path}: int8 rows reach cosine {cos.min():.4f} to torch "
                                   f"(< {MIN_INT8_COSINE}); use backend={fp32!r}")  # fmt: skip
            return
        diff = float(np.abs(got - want_np).max())
        if not np.isfinite(diff) or diff > MAX_ABS_DIFF:
            raise BackendError(f"{self.path}: differs from torch by {diff:.2e} (> {MAX_ABS_DIFF})")


def _cached_graph(
    chain: Chain, runtime: str, output: str, folder: Path, probes: Features, per_token: bool, stem: str
) -> Path:
    """The fp32 graph (and its int8 version for the int8 runtimes), exported once per weights digest."""
    reduce_range = int8_reduce_range()  # a graph quantized for another kind of CPU is another file
    int8 = folder / f"{stem}-int8{'-7bit' if reduce_range else ''}.onnx"
    fp32, manifest = folder / f"{stem}.onnx", f"{stem}.json"
    digest = chain.digest()
    if not fp32.is_file() or read_manifest(folder, manifest).get("digest") != digest:
        export_feature(chain, probes, output, per_token, fp32)
        for old in folder.glob(f"{stem}-int8*.onnx"):
            old.unlink(missing_ok=True)
        write_manifest(folder, {"digest": digest, "output": output}, manifest)
    if not runtime.endswith("int8"):
        return fp32
    if not int8.is_file():
        quantize_int8(fp32, int8, reduce_range=reduce_range)
    return int8
