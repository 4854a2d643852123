"""The `torch-int8` backend: the chain in torch on the CPU with every Linear of its Transformer in int8.

Weights are int8 per output channel (symmetric, scale = max|w| / 127), quantized once when the
backend is built; activations are quantized at run time, and the products run on fbgemm's int8
GEMM (AVX2 / AVX512-VNNI kernels) with an int32 accumulator. Nothing is calibrated, so
any Transformer (encoders, decoders such as Qwen3, cross-encoders) runs without an export step.

Two activation granularities, picked by the start-up check:
- per tensor (torch's dynamic quantized linear: one scale for the batch's matrix): the fastest,
  about 100 sentences/s on a Qwen3-0.6B-shaped decoder on 2 AMD EPYC cores, 5x fp32;
- per row (one scale per token, `torch._int_mm`): 91 sentences/s there, but a token with outlier
  activations (or a padded row) no longer flattens every other token's resolution.
The check embeds the probe sentences in fp32 and in int8 and keeps per tensor where its worst
cosine reaches PER_TENSOR_MIN_COSINE, else per row; per row is held to the int8 guard the graph
backends use.

Memory: the int8 modules share every tensor of the model but the Linear weights, so the backend
adds about a quarter of those weights (the model's fp32 weights stay: they are the training master).
A model loaded with dtype="int8" holds the int8 Linears alone (`hold_int8`).
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Callable, Iterator, Sequence

import torch
from torch import nn

from sbert.backends.base import INT8_MIN_COSINE, Chain, cast_copy, embed_padded, large_releaser, probe_features
from sbert.backends.pages import Drop, cast_parameters, release, replace_tensor
from sbert.backends.torch_cpu import TorchCpuBackend, cpu_batch_tokens, trims_heap
from sbert.device import check_cpu_int8, int8_reduce_range
from sbert.errors import BackendError
from sbert.modules import Module, Transformer

# The worst probe cosine per-tensor activations must keep; below it the rows get their own scales.
PER_TENSOR_MIN_COSINE = 0.99
# fbgemm's packed int8 weights: oneDNN's ran 10% faster (107 against 97 sentences/s on the 0.6B
# decoder, 2 AMD EPYC cores) but keep the int8 weights twice, packed and as given (peak 1.61 against
# 1.08 GiB with dtype="int8"). Where torch has no fbgemm (Arm), its default engine packs them.
ENGINE = "fbgemm" if "fbgemm" in torch.backends.quantized.supported_engines else torch.backends.quantized.engine


class Int8Linear(nn.Module):
    """A Linear as int8 weights (per output channel) times int8 activations (per tensor or per row)."""

    def __init__(self, linear: nn.Linear, per_row: bool = False) -> None:
        super().__init__()
        weight = linear.weight.detach().float()
        self.out_features = weight.shape[0]
        self.scale = (weight.abs().amax(1) / 127).clamp(min=1e-12)
        self.bias = None if linear.bias is None else linear.bias.detach().float()
        self.per_row = per_row
        self.reduce_range = int8_reduce_range()  # 7-bit activations where the kernel's 16-bit sums would overflow
        # int8 weights, fp32 scales and bias, none of them parameters (base.weight_bytes asks for this)
        self.held_bytes = weight.numel() + 4 * (self.scale.numel() + (0 if self.bias is None else self.bias.numel()))
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
        out = (
            self._per_row(flat)
            if self.per_row
            else torch.ops.quantized.linear_dynamic(flat, self.packed, self.reduce_range)
        )
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


def int8_modules(modules: Sequence[Module], per_row: bool, drop: Drop | None = None) -> tuple[Module, ...]:
    """A copy of the chain whose Transformer Linears are Int8Linear; every other tensor is shared, not copied.

    `drop(weight)` (pages.unwritten_releaser) hands each float weight's pages back once it is quantized.
    """
    shared = {id(t): t for m in modules for t in (*m.parameters(), *m.buffers())}
    copied = copy.deepcopy(nn.ModuleList(modules), shared).eval()
    for parent, name, child in linear_slots(copied[0]):
        setattr(parent, name, Int8Linear(child, per_row))
        if drop is not None:
            drop(child.weight)
    return tuple(m for m in copied)  # type: ignore[misc]


def linear_slots(root: nn.Module) -> list[tuple[nn.Module, str, nn.Linear]]:
    """(parent, attribute, layer) of every plain nn.Linear under `root`; subclasses (peft's LoRA layers) keep theirs."""
    return [(parent, name, child) for parent in root.modules() for name, child in parent.named_children()
            if type(child) is nn.Linear]  # fmt: skip


class TorchInt8Backend(TorchCpuBackend):
    """TorchCpuBackend over the int8 copy of the chain, checked against fp32 torch on start."""

    name = "torch-int8"

    def __init__(self, chain: Chain, device: torch.device) -> None:
        if device.type != "cpu":
            raise BackendError(f"backend 'torch-int8' runs on the CPU, not on {device}; use backend='torch'")
        self.chain, self.device = chain, device
        self.workers = torch.get_num_threads()
        fp32 = cast_copy(chain.modules, device, torch.float32)  # the model itself when it holds fp32 weights
        features = probe_features(chain.transformer)
        # A large model's float Linears that nothing wrote go back to the page cache once read (in
        # the reference run, then as each is quantized): only the int8 copy stays resident.
        drop = large_releaser(fp32)
        hooks = [] if drop is None else [m.register_forward_hook(_dropper(drop)) for _, _, m in linear_slots(fp32[0])]
        with torch.inference_mode():
            try:
                reference = embed_padded(fp32, features, device).float()
            finally:  # the hooks sit on the user's own Linears when the model holds fp32
                for hook in hooks:
                    hook.remove()

            def build(per_row: bool) -> torch.Tensor:
                self.modules = int8_modules(fp32, per_row, drop)
                return embed_padded(self.modules, features, device).float()

            self.per_row = choose_granularity(reference, build)
        self.trim = trims_heap(self.modules, device)
        self.default_batch_tokens = cpu_batch_tokens(self.modules)


def choose_granularity(reference: torch.Tensor, build: Callable[[bool], torch.Tensor]) -> bool:
    """per_row: False where per-tensor activations keep PER_TENSOR_MIN_COSINE, else True (or a one-line error).

    `build(per_row)` quantizes that way and returns the probe sentences' vectors.
    """
    cosine = 0.0
    for per_row in (False, True):
        cosine = float(nn.functional.cosine_similarity(reference, build(per_row)).min())
        if cosine >= (INT8_MIN_COSINE if per_row else PER_TENSOR_MIN_COSINE):
            return per_row
    raise BackendError(f"backend 'torch-int8': int8 cosine to fp32 torch {cosine:.3f} < {INT8_MIN_COSINE} "
                       "on the probe sentences; use backend='torch'")  # fmt: skip


def holds_int8(module: nn.Module) -> bool:
    """Whether `module` runs Linears held in int8 (a model loaded with dtype="int8": inference only)."""
    return any(isinstance(m, Int8Linear) for m in module.modules())


def hold_int8(modules: Sequence[Module], device: torch.device) -> None:
    """Turn the chain's Transformer Linears into Int8Linear in place, keeping no float copy of their weights.

    For a model just loaded (its weights views of the safetensors mapping, nothing written): the
    probe sentences run once in float with each Linear's pages released after its product, every
    Linear is quantized and released in turn, and the probes run again in int8 (choose_granularity).
    The rest of the chain's float tensors move to fp32. Resident at the end: the int8 weights and the
    pages of the other tensors that were read (the embedding rows of the tokens seen).
    """
    if device.type != "cpu":
        raise BackendError(f"dtype='int8' holds weights for the CPU's int8 kernels, not for {device}; use dtype='bf16'")
    check_cpu_int8("torch-int8")
    transformer = modules[0]
    if not isinstance(transformer, Transformer):
        raise BackendError(f"dtype='int8' quantizes a Transformer's Linears; this model starts with "
                           f"{type(transformer).__name__}")  # fmt: skip
    if any(type(m).__module__.startswith("peft.") for m in transformer.modules()):
        raise BackendError("dtype='int8' on a model with a LoRA adapter: merge it first (sbert merge-adapter), "
                           "then load the merged folder in int8")  # fmt: skip
    cast_parameters(transformer, torch.float32)
    for name, buffer in list(transformer.named_buffers()):
        if buffer.is_floating_point() and buffer.dtype != torch.float32:
            replace_tensor(transformer, name, buffer.float())
    slots = linear_slots(transformer)
    features = probe_features(transformer)
    hooks = [child.register_forward_hook(_dropper(release)) for _, _, child in slots]
    with torch.inference_mode():
        reference = embed_padded(modules, features, torch.device("cpu")).float()
        for hook in hooks:
            hook.remove()

        def build(per_row: bool) -> torch.Tensor:
            for parent, name, child in slots:
                setattr(parent, name, Int8Linear(child, per_row))
                release(child.weight)
            return embed_padded(modules, features, torch.device("cpu")).float()

        try:
            choose_granularity(reference, build)
        except BackendError:
            for parent, name, child in slots:  # the float layers back: the model stays usable
                setattr(parent, name, child)
            raise


def _dropper(drop: Drop) -> Callable[[nn.Module, object, object], None]:
    """A forward hook handing the Linear's weight to `drop` once its product is done (the output stays)."""

    def hook(linear: nn.Module, _inputs: object, _output: object) -> None:
        drop(linear.weight)  # type: ignore[arg-type]

    return hook
