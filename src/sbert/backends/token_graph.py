"""A chain whose output is per token (a multi-vector model's token vectors) as one ONNX graph.

Exported once, cached by a digest of the weights, run on ONNX Runtime or OpenVINO, checked against torch.

The dense backends (onnx_runtime.py, openvino_runtime.py) end their graph at the sentence vector;
this one ends at a (B, T, dim) feature, so the caller picks the rows it scores. The int8 variants
are ONNX Runtime's dynamic quantization of every MatMul's weights (per channel) and OpenVINO's
compile of that graph; both are checked against torch by the cosine of every token vector.
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
from sbert.backends.cache import read_manifest, write_manifest
from sbert.backends.export import OPSET, eager_attention, quantize_int8, temp_beside
from sbert.errors import BackendError, first_line
from sbert.modules import Features, Module

RUNTIMES = ("onnx", "onnx-int8", "openvino", "openvino-int8")
MAX_ABS_DIFF = 1e-3  # fp32 graph against torch, unit-length token vectors
MIN_INT8_COSINE = 0.98  # int8 graph: the worst token's cosine to torch on the probes


class TokenGraph(nn.Module):
    """Positional tensors -> one per-token feature of the chain: what `torch.onnx.export` traces."""

    def __init__(self, modules: Sequence[Module], names: tuple[str, ...], output: str) -> None:
        super().__init__()
        self.chain, self.names, self.output = nn.ModuleList(modules), names, output

    def forward(self, *tensors: Tensor) -> Tensor:
        """The (B, T, dim) output of a padded batch."""
        return run_chain(list(self.chain), dict(zip(self.names, tensors, strict=True)))[self.output]  # type: ignore[arg-type]


def export_tokens(chain: Chain, sample: Features, output: str, path: Path) -> None:
    """Trace the chain on the CPU into `path`, atomically; `sample` is a padded batch with two lengths."""
    names = tuple(n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample)
    dynamic = {n: {0: "batch", 1: "tokens"} for n in names} | {output: {0: "batch", 1: "tokens"}}
    graph = TokenGraph(chain.modules, names, output).to("cpu").eval()
    try:
        with eager_attention(chain), temp_beside(path) as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(graph, tuple(sample[n].cpu() for n in names), str(tmp), dynamo=False,
                              input_names=list(names), output_names=[output], dynamic_axes=dynamic,
                              opset_version=OPSET, do_constant_folding=True)  # fmt: skip
    except (RuntimeError, ValueError, TypeError) as e:
        raise BackendError(f"ONNX export failed: {first_line(e)}") from None


class TokenGraphEngine:
    """The cached graph of `chain` on `runtime` (onnx, onnx-int8, openvino, openvino-int8)."""

    def __init__(self, chain: Chain, runtime: str, output: str, folder: Path, probes: Features) -> None:
        if runtime not in RUNTIMES:
            raise BackendError(f"unknown backend {runtime!r}; known: torch, {', '.join(RUNTIMES)}")
        self.runtime, self.output = runtime, output
        self.path = _cached_graph(chain, runtime, output, folder, probes)
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
        """float32 (B, T, dim) of a padded batch."""
        feed = {name: features[name].cpu().numpy() for name in self.names}
        if self.runtime.startswith("openvino"):
            self.request.infer(feed)
            return np.array(self.request.get_output_tensor(0).data, dtype=np.float32)
        return np.asarray(self.session.run(None, feed)[0], dtype=np.float32)

    def _check(self, chain: Chain, probes: Features) -> None:
        """Refuse a graph whose token vectors differ from torch's (fp32: 1e-3; int8: cosine 0.98)."""
        with torch.inference_mode():
            want = run_chain(chain.modules, {k: v.to(chain.device) for k, v in probes.items()})[self.output]
        want_np = want.float().cpu().numpy()
        got, real = self.embed(probes), probes["attention_mask"].bool().numpy()
        if self.runtime.endswith("int8"):
            a, b = got[real], want_np[real]
            cos = (a * b).sum(-1) / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-12)
            if not np.isfinite(cos).all() or cos.min() < MIN_INT8_COSINE:
                raise BackendError(f"{self.path}: int8 token vectors reach cosine {cos.min():.4f} to torch "
                                   f"(< {MIN_INT8_COSINE}); use backend='onnx'")  # fmt: skip
            return
        diff = float(np.abs(got[real] - want_np[real]).max())
        if not np.isfinite(diff) or diff > MAX_ABS_DIFF:
            raise BackendError(f"{self.path}: differs from torch by {diff:.2e} (> {MAX_ABS_DIFF})")


def _cached_graph(chain: Chain, runtime: str, output: str, folder: Path, probes: Features) -> Path:
    """The fp32 graph (and its int8 version for the int8 runtimes), exported once per weights digest."""
    fp32 = folder / f"{output}.onnx"
    stamp: dict[str, object] = {"digest": chain.digest(), "output": output}
    manifest = f"{output}.json"
    if not fp32.is_file() or read_manifest(folder, manifest).get("digest") != stamp["digest"]:
        export_tokens(chain, probes, output, fp32)
        (folder / f"{output}-int8.onnx").unlink(missing_ok=True)
        write_manifest(folder, stamp, manifest)
    if not runtime.endswith("int8"):
        return fp32
    int8 = folder / f"{output}-int8.onnx"
    if not int8.is_file():
        quantize_int8(fp32, int8)
    return int8
