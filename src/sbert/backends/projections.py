"""A Linear's matrix as the lean forward multiplies it: oneDNN's prepacked weight where torch has it.

torch's `functional.linear` on an x86 CPU calls MKL's sgemm, which packs the weight into its own panels on
every call and, on an AMD CPU, runs its generic kernels. oneDNN (in every x86 torch build) picks its kernel
from the CPU's instruction sets, whatever the vendor, and takes a weight reordered once into its blocked
layout (`_reorder_linear_weight`), so a call packs nothing. It also applies the layer's activation or
adds the residual in the same pass. MiniLM's four matrices of a layer on one thread, 2-core AMD EPYC (Zen
4): `linear` cost 1.50x oneDNN's prepacked call at 8 rows, 1.23x at 112, 1.16x at 896
(`python benchmarks/speed/lean_forward.py --matrices`, docs/speed.md). Elsewhere (not x86-64, weights not
float32, no oneDNN, or `SBERT_CPU_MATMUL=linear` for comparing the two) each projection is torch's
`linear` on the module's own weight, as the modules call it.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor
from torch.nn import functional

MATMUL_ENV = "SBERT_CPU_MATMUL"
# transformers' `hidden_act` names whose function oneDNN applies in the projection: (post-op, algorithm).
FUSED_ACTIVATIONS = {"gelu": ("gelu", "none"), "gelu_new": ("gelu", "tanh"),
                     "gelu_pytorch_tanh": ("gelu", "tanh"), "relu": ("relu", "")}  # fmt: skip
X86 = {"x86_64", "amd64"}  # where oneDNN's call was measured (its aarch64 build runs other kernels)


class Projection(Protocol):
    """x @ W.T + b on (N, in) rows, then the layer's activation or the residual added."""

    def __call__(self, x: Tensor, residual: Tensor | None = None) -> Tensor:
        """(N, out) rows: the projection, activated or with `residual` (N, out) added."""
        ...


@dataclass(frozen=True)
class LinearProjection:
    """torch's `linear` on the (out, in) weight, as the Linear module calls it."""

    weight: Tensor  # (out, in)
    bias: Tensor  # (out,)
    activation: Callable[[Tensor], Tensor] | None = None

    def __call__(self, x: Tensor, residual: Tensor | None = None) -> Tensor:
        """(N, out) rows: x @ W.T + b, activated, plus `residual` when given."""
        y = functional.linear(x, self.weight, self.bias)
        if self.activation is not None:
            y = self.activation(y)
        return y if residual is None else y + residual


@dataclass(frozen=True)
class OneDnnProjection:
    """oneDNN's prepacked weight; its activation (`post`) or the residual applied in the same call."""

    packed: Tensor  # an opaque oneDNN tensor of the (out, in) weight
    bias: Tensor  # (out,)
    post: str = "none"
    algorithm: str = ""
    activation: Callable[[Tensor], Tensor] | None = None  # one oneDNN does not apply, run after it

    def __call__(self, x: Tensor, residual: Tensor | None = None) -> Tensor:
        """(N, out) rows: x @ W.T + b, activated, plus `residual` when given."""
        if residual is not None:
            return torch.ops.mkldnn._linear_pointwise.binary(x, residual, self.packed, self.bias, "add")
        y = torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, self.post, [], self.algorithm)
        return y if self.activation is None else self.activation(y)


def onednn_usable(dtype: torch.dtype) -> bool:
    """Whether projections of `dtype` weights take oneDNN's prepacked call here (x86-64, float32, oneDNN)."""
    if os.environ.get(MATMUL_ENV, "").lower() == "linear" or dtype != torch.float32:
        return False
    if platform.machine().lower() not in X86 or not torch.backends.mkldnn.is_available():
        return False
    return all(hasattr(torch.ops.mkldnn, name) for name in ("_linear_pointwise", "_reorder_linear_weight"))


def projection(weight: Tensor, bias: Tensor, activation: Callable[[Tensor], Tensor] | None = None,
               act_name: str | None = None) -> Projection:  # fmt: skip
    """The Projection of a Linear's (out, in) `weight` and `bias`, then `activation` (named `act_name`).

    A named activation oneDNN knows runs inside its call; any other runs after it.
    """
    weight, bias = weight.detach(), bias.detach()
    if not onednn_usable(weight.dtype):
        return LinearProjection(weight, bias, activation)
    packed = torch.ops.mkldnn._reorder_linear_weight(weight, 64)  # a copy; the batch-size hint: any row count runs
    fused = FUSED_ACTIVATIONS.get(act_name or "") if activation is not None else None
    if fused is None:
        return OneDnnProjection(packed, bias, activation=activation)
    return OneDnnProjection(packed, bias, *fused)
