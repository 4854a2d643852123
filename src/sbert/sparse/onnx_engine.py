"""SPLADE on ONNX Runtime or OpenVINO: the MLM and the SPLADE pooling in one graph, exported once, checked.

The graph takes the padded batch and returns the pooled (B, V) vectors, so the logits never leave
the runtime; it is cached beside the model (`onnx/splade.onnx`), keyed by a digest of the weights.
OpenVINO compiles the same graph (fp32, one stream using every core: batches come one at a time).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor, nn

from sbert.errors import BackendError, first_line
from sbert.modules.base import Features
from sbert.sparse.splade import pool_padded

if TYPE_CHECKING:
    from sbert.sparse.mlm import MLMTransformer
    from sbert.sparse.splade import SpladePooling

GRAPH = "splade.onnx"
MANIFEST = "splade.json"
PROBES = ["a man is playing a guitar", "The quick brown fox jumps over the lazy dog, twice!", "x"]
MAX_ABS_DIFF = 1e-3  # fp32 graph against torch, on weights of order 1-10


class SpladeGraph(nn.Module):
    """Positional tensors -> pooled SPLADE vectors: what `torch.onnx.export` traces."""

    def __init__(self, mlm: MLMTransformer, pooling: SpladePooling, names: tuple[str, ...]) -> None:
        super().__init__()
        self.mlm, self.pooling, self.names = mlm, pooling, names

    def forward(self, *tensors: Tensor) -> Tensor:
        """The (B, V) vectors of a padded batch."""
        inputs = dict(zip(self.names, tensors, strict=True))
        logits = self.mlm.auto_model(**inputs, return_dict=True).logits
        return pool_padded(logits, inputs["attention_mask"], self.pooling.pooling_strategy,
                           self.pooling.activation_function)  # fmt: skip


def export(mlm: MLMTransformer, pooling: SpladePooling, path: Path) -> None:
    """Trace the graph on the CPU into `path`, atomically."""
    from sbert.backends.export import OPSET, temp_beside

    sample = mlm.pad(mlm.token_ids(["a short one", "a somewhat longer sentence here"])[0])
    names = tuple(n for n in mlm.model_inputs if n in sample)
    dynamic = {n: {0: "batch", 1: "tokens"} for n in names} | {"sparse_embedding": {0: "batch"}}
    try:
        with temp_beside(path) as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(SpladeGraph(mlm, pooling, names).eval(), tuple(sample[n] for n in names), str(tmp),
                              dynamo=False, input_names=list(names), output_names=["sparse_embedding"],
                              dynamic_axes=dynamic, opset_version=OPSET, do_constant_folding=True)  # fmt: skip
    except (RuntimeError, ValueError, TypeError) as e:
        raise BackendError(f"SPLADE ONNX export failed: {first_line(e)}") from None


class SpladeOnnx:
    """The cached graph on ONNX Runtime (`runtime="onnx"`) or OpenVINO; `embed` maps padded features to (B, V)."""

    def __init__(
        self, mlm: MLMTransformer, pooling: SpladePooling, folder: Path, digest: str, runtime: str = "onnx"
    ) -> None:
        from sbert.backends.cache import read_manifest, write_manifest

        path = folder / GRAPH
        stamp: dict[str, object] = {"digest": digest}
        if not path.is_file() or read_manifest(folder, MANIFEST) != stamp:
            export(mlm, pooling, path)
            write_manifest(folder, stamp, MANIFEST)
        self.path, self.runtime = path, runtime
        if runtime == "openvino":
            from sbert.backends.openvino_runtime import compile_graph, feed_name

            compiled = compile_graph(path, "f32", torch.get_num_threads(), NUM_STREAMS="1")
            self.request = compiled.create_infer_request()
            self.names = [feed_name(port) for port in compiled.inputs]
        else:
            from sbert.backends.onnx_runtime import make_session

            self.session = make_session(path, torch.device("cpu"))
            self.names = [i.name for i in self.session.get_inputs()]
        self._check(mlm, pooling)

    def embed(self, features: Features) -> Tensor:
        """Pooled vectors (B, V) of a padded batch."""
        feed = {name: features[name].cpu().numpy() for name in self.names}
        if self.runtime == "openvino":
            self.request.infer(feed)
            return torch.from_numpy(np.array(self.request.get_output_tensor(0).data, dtype=np.float32))
        return torch.from_numpy(self.session.run(None, feed)[0])

    def _check(self, mlm: MLMTransformer, pooling: SpladePooling) -> None:
        features = mlm.pad(mlm.token_ids(PROBES)[0])
        with torch.inference_mode():
            want = pool_padded(mlm(dict(features))["token_embeddings"], features["attention_mask"],
                               pooling.pooling_strategy, pooling.activation_function)  # fmt: skip
        diff = float((want - self.embed(features)).abs().max())
        if not np.isfinite(diff) or diff > MAX_ABS_DIFF:
            raise BackendError(f"{self.path}: differs from torch by {diff:.2e} (> {MAX_ABS_DIFF})")
