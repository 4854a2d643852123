"""Inference backends behind `SentenceEncoder.encode(backend=...)`: torch, onnx, onnx-int8."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from sbert.errors import BackendError

if TYPE_CHECKING:
    from sbert.backends.onnx_runtime import OnnxBackend
    from sbert.model import SentenceEncoder

BackendName = Literal["torch", "onnx", "onnx-int8"]
BACKENDS: tuple[str, ...] = ("torch", "onnx", "onnx-int8")


def open_backend(model: SentenceEncoder, name: str) -> OnnxBackend:
    """Export (or reuse the cached graph), start a session and check it against torch."""
    if name not in BACKENDS or name == "torch":
        raise BackendError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")
    try:
        from sbert.backends.onnx_runtime import OnnxBackend
    except ImportError as e:
        raise BackendError(f"backend {name!r} needs onnxruntime and onnx: pip install 'sbert[onnx]' ({e})") from None
    return OnnxBackend(model, name)


__all__ = ["BACKENDS", "BackendError", "BackendName", "open_backend"]
