"""The ONNX Runtime backends: fp32 (`onnx`) and dynamically quantized int8 (`onnx-int8`)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from sbert.backends import cache
from sbert.backends.export import OPSET, export_onnx, quantize_int8
from sbert.errors import BackendError
from sbert.modules import Features

if TYPE_CHECKING:
    import onnxruntime

    from sbert.model import SentenceEncoder

log = logging.getLogger(__name__)

GRAPH_FILES = {"onnx": "model.onnx", "onnx-int8": "model_int8.onnx"}
# fp32 must match torch to rounding; int8 trades a little accuracy for speed, so its guard is
# on direction (cosine to the torch vector), the STS benchmark check lives in `sbert export --check`.
FP32_MAX_ABS_DIFF = 1e-4
INT8_MIN_COSINE = 0.9
PROBES = (
    "A man is playing a guitar.",
    "Two dogs run across a snowy field while children watch from the porch.",
    "ok",
    "The quarterly report, which was delayed twice, finally shows revenue growing in every region "
    "except the north-east, where a warehouse fire interrupted deliveries for most of March.",
)


class OnnxBackend:
    """Runs the exported graph; checked against the torch path on every start."""

    def __init__(self, model: SentenceEncoder, name: str) -> None:
        if name not in GRAPH_FILES:
            raise BackendError(f"unknown ONNX backend {name!r}; known: {', '.join(GRAPH_FILES)}")
        self.name = name
        # On CPU encode feeds one single-threaded run per core at a time from threads.
        self.workers = torch.get_num_threads() if model.device.type == "cpu" else 1
        # A cached graph that fails to load or to match torch is exported once more; a fresh
        # export that still fails is a real error.
        for rebuild in (False, True):
            self.path = ensure_graph(model, name, rebuild=rebuild)
            try:
                self.session = make_session(self.path, model.device, 1 if self.workers > 1 else None)
                self.input_names = [i.name for i in self.session.get_inputs()]
                check_against_torch(model, self)
                return
            except BackendError as e:
                if rebuild:
                    raise
                log.warning("%s; exporting again", e)

    def embed(self, features: Features) -> torch.Tensor:
        """Sentence embeddings (B, dim) for padded token features."""
        feed = {name: features[name].cpu().numpy() for name in self.input_names}
        return torch.from_numpy(self.session.run(None, feed)[0])


def ensure_graph(model: SentenceEncoder, name: str, rebuild: bool = False) -> Path:
    """The graph file for `name`, exported (and quantized) first if the cache is missing or stale."""
    import onnxruntime

    digest = model.weights_digest()
    folder = cache.cache_dir(model, digest)
    stamp = {"digest": digest, "opset": OPSET, "onnxruntime": onnxruntime.__version__}
    manifest = cache.read_manifest(folder)
    fresh = not rebuild and all(manifest.get(k) == v for k, v in stamp.items())
    built = set(manifest.get("graphs", [])) if fresh else set()  # type: ignore[call-overload]
    fp32 = folder / GRAPH_FILES["onnx"]
    if "onnx" not in built or not fp32.is_file():
        log.info("exporting %s to ONNX", folder)
        export_onnx(model, fp32)
        built = {"onnx"}
    target = folder / GRAPH_FILES[name]
    if name not in built or not target.is_file():
        quantize_int8(fp32, target)
        built.add(name)
    cache.write_manifest(folder, stamp | {"graphs": sorted(built)})
    return target


def make_session(path: Path, device: torch.device, threads: int | None = None) -> onnxruntime.InferenceSession:
    """An inference session with full graph optimization and `threads` (default torch's count)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads or torch.get_num_threads()
    options.inter_op_num_threads = 1
    providers = ["CPUExecutionProvider"]
    if device.type == "cuda" and "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        providers.insert(0, "CUDAExecutionProvider")
    try:
        return onnxruntime.InferenceSession(str(path), options, providers=providers)
    except Exception as e:  # onnxruntime raises its own pybind exception types
        raise BackendError(f"{path}: cannot load the ONNX graph ({str(e).splitlines()[0]})") from None


def check_against_torch(model: SentenceEncoder, backend: OnnxBackend) -> None:
    """Embed a few probe sentences both ways; a graph that disagrees is refused."""
    torch_rows = model.encode(list(PROBES), convert_to="torch", on_truncation="ignore")
    onnx_rows = backend.embed(model.transformer.pad(model.transformer.token_ids(PROBES)[0]))
    if backend.name == "onnx":
        diff = float((torch_rows - onnx_rows).abs().max())
        if not np.isfinite(diff) or diff > FP32_MAX_ABS_DIFF:
            raise BackendError(f"{backend.path}: differs from torch by {diff:.2e} (> {FP32_MAX_ABS_DIFF})")
        return
    cosine = float(torch.nn.functional.cosine_similarity(torch_rows, onnx_rows).min())
    if not np.isfinite(cosine) or cosine < INT8_MIN_COSINE:
        raise BackendError(f"{backend.path}: int8 cosine to torch {cosine:.3f} < {INT8_MIN_COSINE}")
