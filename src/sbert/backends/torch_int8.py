"""The `torch-int8` backend: the chain in torch on the CPU with every Linear of its Transformer in int8.

Weights are int8 per output channel (symmetric, scale = max|w| / 127), quantized once when the
backend is built; activations are quantized at run time, and the products run on oneDNN's int8
GEMM (VNNI / AMX where the CPU has them) with an int32 accumulator. Nothing is calibrated, so
any Transformer (encoders, decoders such as Qwen3, cross-encoders) runs without an export step.

Two activation granularities, picked by the start-up check:
- per tensor (torch's dynamic quantized linear: one scale for the batch's matrix): the fastest,
  105-108 sentences/s on a Qwen3-0.6B-shaped decoder on 2 AMD EPYC cores, 5.8x fp32;
- per row (one scale per token, `torch._int_mm`): 16% slower there, but a token with outlier
  activations (or a padded row) no longer flattens every other token's resolution.
The check embeds the probe sentences in fp32 and in int8 and keeps per tensor where its worst
cosine reaches PER_TENSOR_MIN_COSINE, else per row; per row is held to the int8 guard the graph
backends use.

Memory: the int8 modules share every tensor of the model but the Linear weights, so the backend
adds about a quarter of those weights (the model's fp32 weights stay: they are the training master).
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Iterator, Sequence

import torch
from torch import nn

from sbert.backends.base import Chain, cast_copy, embed_padded
from sbert.backends.onnx_runtime import INT8_MIN_COSINE, PROBES
from sbert.backends.torch_cpu import TorchCpuBackend
from sbert.errors import BackendError
from sbert.modules import Module

# The worst probe cosine per-tensor activations must keep; below it the rows get their own scales.
PER_TENSOR_MIN_COSINE = 0.99
# oneDNN's prepacked int8 weights ran 10% faster than fbgemm's (torch's "x86" default) per core.
ENGINE = "onednn"


class Int8Linear(nn.Module):
    """A Linear as int8 weights (per output channel) times int8 activations (per tensor or per row)."""

    def __init__(self, linear: nn.Linear, per_row: bool = False) -> None:
        super().__init__()
        weight = linear.weight.detach().float()
        self.out_features = weight.shape[0]
        self.scale = (weight.abs().amax(1) / 127).clamp(min=1e-12)
        self.bias = None if linear.bias is None else linear.bias.detach().float()
        self.per_row = per_row
        if per_row:  # (in, out) int8 for torch._int_mm
            self.weight = torch.round(weight / self.scale[:, None]).to(torch.int8).t().contiguous()
            return
        zero = torch.zeros(weight.shape[0], dtype=torch.long)
        with warnings.catch_warnings():  # torch 2.13 deprecates quantized tensors; the prepacked kernels remain
            warnings.simplefilter("ignore", UserWarning)
            quantized = torch.quantize_per_channel(weight, self.scale.double(), zero, 0, torch.qint8)
        with _engine(ENGINE):  # the packed weight keeps the kernel it was packed for
            self.packed = torch.ops.quantized.linear_prepack(quantized, self.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The product for x (..., in) in any float dtype, as float32 (..., out)."""
        flat = x.reshape(-1, x.shape[-1]).float().contiguous()
        out = self._per_row(flat) if self.per_row else torch.ops.quantized.linear_dynamic(flat, self.packed, False)
        return out.reshape(*x.shape[:-1], self.out_features)

    def _per_row(self, flat: torch.Tensor) -> torch.Tensor:
        rows = flat.shape[0]
        scale = (flat.abs().amax(1, keepdim=True) / 127).clamp(min=1e-12)
        quantized = torch.round(flat / scale).to(torch.int8)
        if rows <= 16:  # torch._int_mm takes more than 16 rows
            quantized = torch.cat([quantized, quantized.new_zeros(17 - rows, quantized.shape[1])])
        out = torch._int_mm(quantized, self.weight)[:rows].float() * scale * self.scale
        return out if self.bias is None else out + self.bias


@contextlib.contextmanager
def _engine(name: str) -> Iterator[None]:
    """The quantized engine of torch set to `name` for the block (a process-wide setting, restored after)."""
    before = torch.backends.quantized.engine
    torch.backends.quantized.engine = name
    try:
        yield
    finally:
        torch.backends.quantized.engine = before


def int8_modules(modules: Sequence[Module], per_row: bool) -> tuple[Module, ...]:
    """A copy of the chain whose Transformer Linears are Int8Linear; every other tensor is shared, not copied."""
    shared = {id(t): t for m in modules for t in (*m.parameters(), *m.buffers())}
    copied = copy.deepcopy(nn.ModuleList(modules), shared).eval()
    for parent in copied[0].modules():
        for name, child in list(parent.named_children()):
            if type(child) is nn.Linear:  # subclasses (peft's LoRA layers) keep their own forward
                setattr(parent, name, Int8Linear(child, per_row))
    return tuple(m for m in copied)  # type: ignore[misc]


class TorchInt8Backend(TorchCpuBackend):
    """TorchCpuBackend over the int8 copy of the chain, checked against fp32 torch on start."""

    name = "torch-int8"

    def __init__(self, chain: Chain, device: torch.device) -> None:
        if device.type != "cpu":
            raise BackendError(f"backend 'torch-int8' runs on the CPU, not on {device}; use backend='torch'")
        self.chain, self.device = chain, device
        self.workers = torch.get_num_threads()
        fp32 = cast_copy(chain.modules, device, torch.float32)  # the model itself when it holds fp32 weights
        features = chain.pad(chain.transformer.token_ids(list(PROBES))[0])
        with torch.inference_mode():
            reference = embed_padded(fp32, features, device).float()
            for per_row in (False, True):
                self.modules = int8_modules(fp32, per_row)
                self.per_row = per_row
                cosine = float(nn.functional.cosine_similarity(reference, self._probe(features)).min())
                if cosine >= (INT8_MIN_COSINE if per_row else PER_TENSOR_MIN_COSINE):
                    return
        raise BackendError(f"backend 'torch-int8': int8 cosine to fp32 torch {cosine:.3f} < {INT8_MIN_COSINE} "
                           "on the probe sentences; use backend='torch'")  # fmt: skip

    def _probe(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        return embed_padded(self.modules, features, self.device).float()
