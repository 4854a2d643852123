"""The ONNX Runtime backends: fp32 (`onnx`) and dynamically quantized int8 (`onnx-int8`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch

from sbert.backends import cache, calibration
from sbert.backends.base import (
    FP32_MAX_ABS_DIFF,
    INT8_MAX_LOGIT_DIFF,
    INT8_MIN_COSINE,
    SCORE_COLUMNS,
    Chain,
    Rows,
    embed_padded,
    is_large,
    probe_features,
    refuse_prompt_skip,
    run_threaded,
)
from sbert.backends.export import OPSET, export_onnx, input_names, quantize_int8
from sbert.backends.pages import release_unwritten
from sbert.backends.smoothing import Feed
from sbert.device import int8_reduce_range
from sbert.errors import BackendError
from sbert.modules import Features

if TYPE_CHECKING:
    import onnxruntime

log = logging.getLogger(__name__)

GRAPH_FILES = {"onnx": "model.onnx", "onnx-int8": "model_int8.onnx", "openvino-int8": "openvino_int8/model.xml"}
# How each int8 graph is made from the fp32 one and the calibration sentences; a cached graph made
# another way is quantized again. onnx-int8: export.quantize_int8 (backends/smoothing.py);
# openvino-int8: openvino_runtime.quantize_openvino (NNCF).
INT8_RECIPES = {
    "onnx-int8": "dynamic-per-channel+smooth-layernorm-0.5",
    "openvino-int8": "nncf-static-transformer+unsigned-fc-inputs",
}
ONNX_BACKENDS = ("onnx", "onnx-int8")
# Padded tokens per batch, measured on 2 cores (benchmarks/speed/encode_speed.py --sweep; docs/speed.md).
ONNX_BATCH_TOKENS = 512


class OnnxBackend:
    """Runs the exported graph; checked against the torch path on every start."""

    packed = False
    default_batch_tokens = ONNX_BATCH_TOKENS
    max_rows = 512

    def __init__(self, chain: Chain, name: str) -> None:
        if name not in ONNX_BACKENDS:
            raise BackendError(f"unknown ONNX backend {name!r}; known: {', '.join(ONNX_BACKENDS)}")
        self.name, self.chain = name, chain
        self.exact = name == "onnx"  # fp32 must match torch to rounding; int8 is held to direction
        # On CPU encode feeds one single-threaded run per core at a time from threads.
        self.workers = torch.get_num_threads() if chain.device.type == "cpu" else 1

        def start(path: Path, reference: Reference) -> None:
            self.path = path
            self.session = make_session(path, chain.device, 1 if self.workers > 1 else None)
            self.input_names = [i.name for i in self.session.get_inputs()]
            check_against_torch(self, reference)

        open_checked(chain, name, start)

    def embed(self, features: Features) -> torch.Tensor:
        """Sentence embeddings (B, dim) for padded token features."""
        feed = {name: features[name].cpu().numpy() for name in self.input_names}
        return torch.from_numpy(self.session.run(None, feed)[0])

    def run(self, ids: Sequence[Sequence[int]], batches: list[list[int]], skip: int = 0) -> Iterator[Rows]:
        """(batch, vectors) in batch order, `workers` single-threaded runs at a time."""
        refuse_prompt_skip(self.name, skip)

        def job(batch: list[int]) -> Rows:
            return batch, self.embed(self.chain.pad([ids[i] for i in batch])).numpy()

        yield from run_threaded(batches, job, self.workers)


# (fp32 graph, target, calibration feeds) -> what the manifest records of the quantization.
Quantizer = Callable[[Path, Path, Sequence[Feed]], dict[str, object]]
# Probe features and torch's float32 vectors for them: what every graph start is checked against.
Reference = tuple[Features, torch.Tensor]


def open_checked(
    chain: Chain, name: str, start: Callable[[Path, Reference], None], quantize: Quantizer | None = None
) -> None:
    """`start(path, reference)` on the cached graph `name`; if it fails to load or to match torch, export once more.

    `reference` is torch's probe vectors, taken before the graph loads: a large model's torch
    weights are then handed back to the page cache (`pages.release_unwritten`) so that they and the
    runtime's own copy are never resident together (a 0.6B decoder's OpenVINO start peaked at 6.9
    GiB, 2.2 of them torch's). A fresh export that still fails is a real error. The ONNX Runtime
    and OpenVINO backends share this; `quantize` makes an int8 graph another way than ONNX
    Runtime's (OpenVINO's NNCF), so this module never imports the OpenVINO one.
    """
    for rebuild in (False, True):
        try:
            path = ensure_graph(chain, name, rebuild=rebuild, quantize=quantize)
            reference = torch_reference(chain)
            if is_large(chain.modules):
                release_unwritten(chain.modules)  # a later torch encode reads them in again
            start(path, reference)
            return
        except BackendError as e:
            if rebuild:
                raise
            log.warning("%s; exporting again", e)


def ensure_graph(chain: Chain, name: str, rebuild: bool = False, quantize: Quantizer | None = None) -> Path:
    """The graph file for `name`, exported (and quantized, by `quantize` or ONNX Runtime's) first if stale."""
    import onnxruntime

    digest = chain.digest()
    folder = cache.cache_dir(chain.source_dir, digest)
    stamp = {"digest": digest, "opset": OPSET, "onnxruntime": onnxruntime.__version__}
    manifest = cache.read_manifest(folder)
    fresh = not rebuild and all(manifest.get(k) == v for k, v in stamp.items())
    built = set(manifest.get("graphs", [])) if fresh else set()  # type: ignore[call-overload]
    fp32 = folder / GRAPH_FILES["onnx"]
    if "onnx" not in built or not fp32.is_file():
        log.info("exporting %s to ONNX", folder)
        export_onnx(chain, fp32)
        built = {"onnx"}
    saved = manifest.get("calibration")
    records = {k: v for k, v in saved.items() if k in built} if isinstance(saved, dict) else {}
    if name in INT8_RECIPES:
        if quantize is None and name != "onnx-int8":
            raise BackendError(
                f"{name}: its int8 graph is made by its own runtime's quantizer; open it through its backend"
            )
        records[name] = _quantized(chain, folder, name, records.get(name), quantize or _quantize_ort)
        built.add(name)
    cache.write_manifest(folder, stamp | {"graphs": sorted(built), "calibration": records})
    return folder / GRAPH_FILES[name]


def _quantized(
    chain: Chain, folder: Path, name: str, record: object, quantize: Quantizer
) -> dict[str, object]:  # fmt: skip
    """Quantize the fp32 graph to int8 `name` unless the cached one came from the same calibration and recipe."""
    sentences = calibration.stored(folder)
    wanted = {"sentences": len(sentences), "sha256": calibration.digest(sentences), "recipe": INT8_RECIPES[name],
              "reduce_range": int8_reduce_range()}  # fmt: skip
    target = folder / GRAPH_FILES[name]
    same = isinstance(record, dict) and all(record.get(k) == wanted[k] for k in ("sha256", "recipe", "reduce_range"))
    if same and target.is_file():
        return record  # type: ignore[return-value]
    feeds = calibration.feeds(chain, sentences, input_names(chain))
    return wanted | quantize(folder / GRAPH_FILES["onnx"], target, feeds)


def _quantize_ort(fp32: Path, target: Path, feeds: Sequence[Feed]) -> dict[str, object]:
    """ONNX Runtime's static int8 (export.quantize_int8), recording which inputs were smoothed."""
    return {"smoothed_inputs": quantize_int8(fp32, target, feeds, reduce_range=int8_reduce_range())}


def calibrate(chain: Chain, sentences: Sequence[str]) -> None:
    """Keep `sentences` as the int8 graphs' calibration; each int8 graph is quantized again on next use."""
    calibration.store(cache.cache_dir(chain.source_dir, chain.digest()), sentences)


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


class GraphEngine(Protocol):
    """What the check needs of a graph runtime (ONNX Runtime's or OpenVINO's): its file, exactness and embed."""

    path: Path
    exact: bool

    def embed(self, features: Features) -> torch.Tensor:
        """Sentence rows for padded features."""
        ...


def torch_reference(chain: Chain) -> Reference:
    """The probe sentences' features and torch's float32 vectors for them (what a graph is checked against)."""
    features = probe_features(chain.transformer)
    with torch.inference_mode():
        return features, embed_padded(chain.modules, features, chain.device).float().cpu()


def check_against_torch(
    backend: GraphEngine, reference: Reference, embed: Callable[[Features], torch.Tensor] | None = None
) -> None:
    """Embed the probe sentences of `reference` through the graph; a graph that disagrees with torch is refused.

    The graph's side runs through `embed` (default: the backend's own). fp32 graphs must agree to
    rounding; int8 (and OpenVINO's bf16) are held to direction.
    """
    features, torch_rows = reference
    onnx_rows = (embed or backend.embed)(features)
    if backend.exact:
        diff = float((torch_rows - onnx_rows).abs().max())
        if not np.isfinite(diff) or diff > FP32_MAX_ABS_DIFF:
            raise BackendError(f"{backend.path}: differs from torch by {diff:.2e} (> {FP32_MAX_ABS_DIFF})")
        return
    if torch_rows.shape[1] < SCORE_COLUMNS:
        diff = float((torch_rows - onnx_rows).abs().max())
        if not np.isfinite(diff) or diff > INT8_MAX_LOGIT_DIFF:
            raise BackendError(f"{backend.path}: int8 logits differ from torch by {diff:.2f} (> {INT8_MAX_LOGIT_DIFF})")
        return
    cosine = float(torch.nn.functional.cosine_similarity(torch_rows, onnx_rows).min())
    if not np.isfinite(cosine) or cosine < INT8_MIN_COSINE:
        what = "bf16" if getattr(backend, "precision", "") == "bf16" else "int8"
        hint = "; calibrate on more varied sentences, short and long (sbert export --calibrate)"
        hint = hint if what == "int8" else ""
        raise BackendError(f"{backend.path}: {what} cosine to torch {cosine:.3f} < {INT8_MIN_COSINE}{hint}")
