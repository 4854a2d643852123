"""Inference backends behind `encode(backend=...)`: torch (CPU or CUDA), torch-int8, onnx(-int8), openvino(-int8).

Each backend follows `base.Backend`: token ids and batches in, `(rows, vectors)` out, plus its
own default batch budget. They receive a `Chain`, never the SentenceEncoder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch

from sbert.backends.base import Backend, Chain, Rows
from sbert.device import check_cpu_int8
from sbert.errors import BackendError
from sbert.install_hint import install_hint
from sbert.modules import StaticEmbedding, Transformer

BackendName = Literal["torch", "torch-int8", "onnx", "onnx-int8", "openvino", "openvino-int8"]


def _torch(chain: Chain, name: str, device: torch.device, dtype: torch.dtype) -> Backend:
    if device.type == "cuda" and isinstance(chain.modules[0], Transformer):  # the packed engine packs encoders
        from sbert.backends.torch_cuda import CudaBackend

        return CudaBackend(chain, device, dtype)
    from sbert.backends.torch_cpu import TorchCpuBackend

    return TorchCpuBackend(chain, device, dtype)


def _torch_int8(chain: Chain, name: str, device: torch.device, dtype: torch.dtype) -> Backend:
    if dtype != torch.float32:
        raise BackendError(f"backend {name!r} computes its products in int8; precision applies to the torch backend")
    from sbert.backends.torch_int8 import TorchInt8Backend

    return TorchInt8Backend(chain, device)


def _onnx(chain: Chain, name: str, device: torch.device, dtype: torch.dtype) -> Backend:
    if dtype != torch.float32:
        raise BackendError(f"backend {name!r} runs its own fp32/int8 graph; precision applies to the torch backend")
    try:
        from sbert.backends.onnx_runtime import OnnxBackend
    except ImportError as e:
        raise BackendError(f"backend {name!r} needs onnxruntime and onnx: {install_hint('onnx')} ({e})") from None
    return OnnxBackend(chain, name)


def _openvino(chain: Chain, name: str, device: torch.device, dtype: torch.dtype) -> Backend:
    try:
        import onnxruntime  # noqa: F401  (the graph is exported and cached by the ONNX backend's code)
        import openvino  # noqa: F401

        from sbert.backends.openvino_runtime import OpenVinoBackend
    except ImportError as e:
        raise BackendError(f"backend {name!r} needs openvino and onnx: {install_hint('openvino')} ({e})") from None
    return OpenVinoBackend(chain, device, dtype, name)


# The names the CLI and encode(backend=...) accept.
BACKENDS: dict[str, Callable[[Chain, str, torch.device, torch.dtype], Backend]] = {
    "torch": _torch,
    "torch-int8": _torch_int8,
    "onnx": _onnx,
    "onnx-int8": _onnx,
    "openvino": _openvino,
    "openvino-int8": _openvino,
}


def open_backend(chain: Chain, name: str, device: torch.device, dtype: torch.dtype = torch.float32) -> Backend:
    """The backend `name` for `chain` on `device` in `dtype` (ONNX: exported, cached and checked)."""
    factory = BACKENDS.get(name)
    if factory is None:
        raise BackendError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")
    if name != "torch" and not isinstance(chain.modules[0], Transformer):
        first = chain.modules[0]
        static = (
            " (or sbert.StaticEncoder, the numpy path of a static table)" if isinstance(first, StaticEmbedding) else ""
        )
        raise BackendError(f"backend {name!r} exports a Transformer chain; this model starts with "
                           f"{type(first).__name__}: use backend='torch'{static}")  # fmt: skip
    if name != "torch" and any(getattr(m, "reads_all_layers", False) for m in chain.modules):
        raise BackendError(f"backend {name!r} exports the last hidden state; this model's WeightedLayerPooling "
                           "reads every layer: use backend='torch'")  # fmt: skip
    if name not in ("torch", "torch-int8"):
        from sbert.backends.torch_int8 import holds_int8

        if holds_int8(chain.modules[0]):
            raise BackendError(f"backend {name!r} exports the float model; this one holds its Linears in int8 "
                               "(loaded with dtype='int8'): use backend='torch'")  # fmt: skip
    if name.endswith("-int8"):  # both runtimes run their int8 kernels on the CPU, whatever `device` is
        check_cpu_int8(name)
    return factory(chain, name, device, dtype)


__all__ = ["BACKENDS", "Backend", "BackendError", "BackendName", "Chain", "Rows", "open_backend"]
