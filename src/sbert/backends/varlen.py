"""Varlen attention for packed batches, plugged into Hugging Face encoders by name.

transformers 5 encoders (BERT, RoBERTa, ALBERT, ELECTRA, XLM-R) look their attention function up
in `AttentionInterface` under `config._attn_implementation` and pass extra forward kwargs through
to it. Registered as `sbert_varlen_<kernel>`, which has no mask function, so the model builds no
(N x N) mask; the cumulative lengths arrive as `cu_seq_lens_q` / `max_length_q`.

Kernels, in order of preference, each checked once against per-sentence attention before use:
`flash_attn_varlen_func` (when installed; half precision on CUDA), torch's `varlen_attn`
(flash attention; half precision on CUDA), SDPA on jagged nested tensors (any device/dtype, not
causal), then SDPA on a padded grid of the sequences (any device/dtype, causal too: decoders).
"""

from __future__ import annotations

import itertools
import logging
import warnings
from collections.abc import Callable

import torch
from torch import Tensor
from torch.nn import functional

from sbert.backends.grid_buckets import bucketed_sdpa
from sbert.backends.packing import segment_positions
from sbert.errors import first_line

log = logging.getLogger(__name__)
# SDPA on jagged tensors warns at every call that nested tensors are a prototype API.
warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors is in prototype stage")

ATTENTION_NAME = "sbert_varlen"
# The forward kwarg carrying the batch's shortest length (transformers knows only max_length_q).
MIN_LENGTH_KWARG = "sbert_min_length"
# (q, k, v as (N, heads, d), cu_seqlens (B+1,) int32, max_len, min_len, scale, causal) -> (N, heads, d).
# causal: each token sees only its own sequence's earlier tokens (decoder backbones), else the whole sequence.
Kernel = Callable[[Tensor, Tensor, Tensor, Tensor, int, int, float | None, bool], Tensor]


def nested_sdpa(
    q: Tensor, k: Tensor, v: Tensor, cu: Tensor, max_len: int, min_len: int, scale: float | None, causal: bool = False
) -> Tensor:
    """SDPA over jagged nested tensors: one ragged batch, no padding computed.

    Both extreme lengths are given: without them, SDPA's fused-kernel checks read each back
    from the GPU (`offsets.diff().min().item()`), three host syncs per layer for q, k and v.
    """
    offsets = cu.long()

    def jagged(x: Tensor) -> Tensor:  # (N, h, d) -> nested (B, h, j, d)
        nested = torch.nested.nested_tensor_from_jagged(x, offsets=offsets, min_seqlen=min_len, max_seqlen=max_len)
        return nested.transpose(1, 2)

    out = functional.scaled_dot_product_attention(jagged(q), jagged(k), jagged(v), scale=scale, is_causal=causal)
    return out.transpose(1, 2).values()


def grid_sdpa(
    q: Tensor, k: Tensor, v: Tensor, cu: Tensor, max_len: int, min_len: int, scale: float | None, causal: bool = False
) -> Tensor:
    """SDPA on a right-padded (B, heads, max_len, d) grid of the sequences, then back to packed rows.

    Any device and dtype, causal or not (nested SDPA refuses is_causal). Only attention sees the
    padding; the linear layers around it still run on packed tokens. With right padding a causal
    mask alone keeps every real token off the padding after it; a bidirectional call masks the keys.
    On the CPU sequences of like length share a grid (grid_buckets.py), sparing attention the square of
    the padding; elsewhere one grid (`one_grid_sdpa`), which needs no host sync to plan.
    """
    if cu.device.type == "cpu":
        return bucketed_sdpa(q, k, v, cu, scale, causal)
    return one_grid_sdpa(q, k, v, cu, max_len, scale, causal)


def one_grid_sdpa(q: Tensor, k: Tensor, v: Tensor, cu: Tensor, max_len: int, scale: float | None,
                  causal: bool) -> Tensor:  # fmt: skip
    """`grid_sdpa` on one (B, heads, max_len, d) grid of every sequence, planned on the device."""
    seg, pos = segment_positions(cu, q.shape[0])  # (N,), (N,)
    rows = cu.shape[0] - 1

    def grid(x: Tensor) -> Tensor:  # (N, h, d) -> (B, h, L, d)
        out = x.new_zeros((rows, max_len, *x.shape[1:]))
        out[seg, pos] = x
        return out.transpose(1, 2)

    mask = None
    if not causal:
        lengths = (cu[1:] - cu[:-1]).long()
        mask = (torch.arange(max_len, device=q.device)[None, :] < lengths[:, None])[:, None, None, :]  # (B, 1, 1, L)
    out = functional.scaled_dot_product_attention(grid(q), grid(k), grid(v), attn_mask=mask, scale=scale,
                                                  is_causal=causal)  # fmt: skip
    return out.transpose(1, 2)[seg, pos]


def torch_varlen(
    q: Tensor, k: Tensor, v: Tensor, cu: Tensor, max_len: int, min_len: int, scale: float | None, causal: bool = False
) -> Tensor:
    """torch.nn.attention.varlen.varlen_attn (flash attention, CUDA, fp16/bf16); causal as the window (-1, 0)."""
    from torch.nn.attention.varlen import varlen_attn

    cu32 = cu.to(torch.int32)
    window = (-1, 0) if causal else (-1, -1)
    out = varlen_attn(q, k, v, cu32, cu32, max_len, max_len, scale=scale, window_size=window)
    return out[0] if isinstance(out, tuple) else out


def flash_attn_varlen(
    q: Tensor, k: Tensor, v: Tensor, cu: Tensor, max_len: int, min_len: int, scale: float | None, causal: bool = False
) -> Tensor:
    """flash_attn's varlen kernel (optional dependency; CUDA, fp16/bf16)."""
    from flash_attn import flash_attn_varlen_func

    cu32 = cu.to(torch.int32)
    return flash_attn_varlen_func(q, k, v, cu32, cu32, max_len, max_len, softmax_scale=scale, causal=causal)


def reference_attention(
    q: Tensor, k: Tensor, v: Tensor, cu: Tensor, max_len: int, min_len: int, scale: float | None, causal: bool = False
) -> Tensor:
    """One dense SDPA call per sentence: slow, obviously right; the yardstick for the kernels."""
    bounds = cu.tolist()
    parts = []
    for a, b in itertools.pairwise(bounds):
        qs, ks, vs = (x[a:b].transpose(0, 1) for x in (q, k, v))  # (h, len, d)
        parts.append(functional.scaled_dot_product_attention(qs, ks, vs, scale=scale, is_causal=causal).transpose(0, 1))
    return torch.cat(parts)


KERNEL_NAMES = {
    "flash_attn": "flash_attn varlen", "torch": "torch varlen_attn", "nested": "SDPA on nested tensors",
    "grid": "SDPA on a padded grid of the packed sequences",
}  # fmt: skip
KERNELS: dict[str, Kernel] = {"flash_attn": flash_attn_varlen, "torch": torch_varlen, "nested": nested_sdpa,
                              "grid": grid_sdpa}  # fmt: skip


def candidate_kernels(device: torch.device, dtype: torch.dtype, causal: bool = False) -> list[tuple[str, Kernel]]:
    """The kernels worth trying on this device and dtype, fastest first, keyed as KERNEL_NAMES."""
    found: list[tuple[str, Kernel]] = []
    if device.type == "cuda" and dtype in (torch.float16, torch.bfloat16):
        try:
            import flash_attn  # noqa: F401

            found.append(("flash_attn", flash_attn_varlen))
        except ImportError:
            pass
        try:
            from torch.nn.attention import varlen  # noqa: F401

            found.append(("torch", torch_varlen))
        except ImportError:
            pass
    if device.type == "cpu":
        # On the CPU the grid beats nested tensors: MiniLM on random 16-sentence batches, one thread, 5.6 against
        # 9.9 ms a sentence (nested SDPA's per-call bookkeeping); the linear layers run packed either way.
        found.append(("grid", grid_sdpa))
    if not causal:  # nested SDPA refuses is_causal
        found.append(("nested", nested_sdpa))
    if device.type != "cpu":
        found.append(("grid", grid_sdpa))
    return found


def pick_kernel(
    device: torch.device, dtype: torch.dtype, heads: int, head_dim: int, causal: bool = False
) -> tuple[str, Kernel] | None:
    """The first kernel that runs here and matches per-sentence attention (causal or not); None when none does."""
    gen = torch.Generator().manual_seed(0)
    lengths = [5, 1, 17, 9]
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32, device=device)
    q, k, v = (torch.randn(sum(lengths), heads, head_dim, generator=gen).to(device, dtype) for _ in range(3))
    want = reference_attention(q.float(), k.float(), v.float(), cu, max(lengths), min(lengths), None, causal)
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    for name, kernel in candidate_kernels(device, dtype, causal):
        try:
            got = kernel(q, k, v, cu, max(lengths), min(lengths), None, causal)
        except Exception as e:  # kernels raise RuntimeError, NotImplementedError or import errors
            log_once(f"varlen kernel {KERNEL_NAMES[name]} rejected on {device} in {dtype}: {first_line(e)}")
            continue
        error = float((got.float() - want).abs().max()) if got.shape == want.shape else float("inf")
        if error <= tolerance:
            return name, kernel
        log_once(
            f"varlen kernel {KERNEL_NAMES[name]} rejected on {device} in {dtype}: "
            f"max error {error:.3g} against per-sentence attention (tolerance {tolerance:g})"
        )
    return None


_LOGGED: set[str] = set()


def log_once(message: str) -> None:
    """An info line the first time `message` comes up in this process (engines are rebuilt often)."""
    if message not in _LOGGED:
        _LOGGED.add(message)
        log.info("%s", message)


def make_attention_function(kernel: Kernel) -> Callable[..., tuple[Tensor, None]]:
    """A transformers attention function running `kernel` on one packed row of N tokens."""

    def attention(
        module: torch.nn.Module, query: Tensor, key: Tensor, value: Tensor, attention_mask: Tensor | None,
        scaling: float | None = None, dropout: float = 0.0, **kwargs: object,
    ) -> tuple[Tensor, None]:  # fmt: skip
        # query/key/value: (1, heads, N, d) -> (N, heads, d) for the kernel
        cu = kwargs.get("cu_seq_lens_q")
        if not isinstance(cu, Tensor):
            raise RuntimeError("sbert_varlen attention needs cu_seq_lens_q (run it through the packed forward)")
        max_len, min_len = kwargs.get("max_length_q"), kwargs.get(MIN_LENGTH_KWARG)
        if not isinstance(max_len, int) or not isinstance(min_len, int):  # a host sync: the packed forward gives both
            lengths = cu[1:] - cu[:-1]
            max_len, min_len = int(lengths.max()), int(lengths.min())
        q, k, v = (x[0].transpose(0, 1) for x in (query, key, value))
        if k.shape[1] != q.shape[1]:  # grouped-query attention (decoders): each key/value head serves a group
            k, v = (x.repeat_interleave(q.shape[1] // x.shape[1], dim=1) for x in (k, v))
        # Decoder layers say is_causal (Gemma3 with bidirectional attention, as EmbeddingGemma sets it, does not).
        out = kernel(q, k, v, cu, max_len, min_len, scaling, bool(getattr(module, "is_causal", False)))
        return out.unsqueeze(0), None  # (1, N, heads, d), as transformers' functions return

    return attention


def register(key: str, kernel: Kernel) -> str:
    """Register `kernel` as the attention implementation `sbert_varlen_<key>`; returns that name."""
    from transformers import AttentionInterface

    name = f"{ATTENTION_NAME}_{key}"
    AttentionInterface.register(name, make_attention_function(kernel))
    return name
