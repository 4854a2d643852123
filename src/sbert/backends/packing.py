"""Padding-free batches: sentences laid end to end with cumulative lengths, and pooling on them.

A packed batch of B sentences with N tokens in all is one (N,) row of token ids, the (B+1,)
cumulative lengths `cu` (sentence b is tokens cu[b]..cu[b+1]-1) and per-token position ids
restarting at every sentence. No padding token is ever computed; varlen attention keeps each
sentence's tokens to themselves (backends/varlen.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from sbert.vectors.positions import Positions

PLAIN = Positions()  # 0, 1, 2, ... in every row


@dataclass(frozen=True)
class PackedBatch:
    """One packed batch, on the host or on the device."""

    input_ids: Tensor  # (N,) int64
    position_ids: Tensor  # (N,) int64, restarting at every sentence, by the backbone's rule (vectors/positions.py)
    cu_seqlens: Tensor  # (B+1,) int32, cumulative lengths starting at 0
    max_len: int  # longest sentence of the batch
    min_len: int = 0  # shortest: SDPA on nested tensors would otherwise read it back from the GPU

    @property
    def rows(self) -> int:
        """Sentences in the batch."""
        return int(self.cu_seqlens.shape[0]) - 1

    def to(self, device: torch.device, non_blocking: bool = False) -> PackedBatch:
        """The same batch on `device` (asynchronous from pinned memory when `non_blocking`)."""
        ids, positions, cu = (
            t.to(device, non_blocking=non_blocking) for t in (self.input_ids, self.position_ids, self.cu_seqlens)
        )
        return PackedBatch(ids, positions, cu, self.max_len, self.min_len)


def pack(rows: Sequence[Sequence[int]], positions: Positions = PLAIN, pin: bool = False) -> PackedBatch:
    """Lay `rows` of token ids end to end, numbered by the backbone's `positions` rule (pinned when `pin`)."""
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    cu = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=cu[1:])
    total = int(cu[-1])
    ids = np.fromiter((t for r in rows for t in r), dtype=np.int64, count=total)
    numbered = positions.of(ids, lengths)
    tensors = [torch.from_numpy(ids), torch.from_numpy(numbered), torch.from_numpy(cu.astype(np.int32))]
    if pin:
        tensors = [t.pin_memory() for t in tensors]
    shortest = int(lengths.min()) if len(rows) else 0
    return PackedBatch(tensors[0], tensors[1], tensors[2], int(lengths.max(initial=0)), shortest)


def segment_ids(cu_seqlens: Tensor, total: int) -> Tensor:
    """For each of the N packed tokens, the index of its sentence: (B+1,) -> (N,)."""
    lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).long()
    return torch.repeat_interleave(torch.arange(lengths.shape[0], device=cu_seqlens.device), lengths, output_size=total)


def segment_positions(cu_seqlens: Tensor, total: int) -> tuple[Tensor, Tensor]:
    """For each of the N packed tokens, its sentence and its position in that sentence: (N,), (N,)."""
    seg = segment_ids(cu_seqlens, total)
    return seg, torch.arange(total, device=cu_seqlens.device) - cu_seqlens[:-1].long()[seg]


def packed_mean(tokens: Tensor, cu_seqlens: Tensor) -> Tensor:
    """Mean of each sentence's token vectors: (N, H) -> (B, H)."""
    seg = segment_ids(cu_seqlens, tokens.shape[0])
    rows = cu_seqlens.shape[0] - 1
    # Sums in fp32: a bf16 running sum over 128 tokens loses about two significant digits.
    sums = torch.zeros((rows, tokens.shape[1]), dtype=torch.float32, device=tokens.device)
    sums.index_add_(0, seg, tokens.float())
    counts = (cu_seqlens[1:] - cu_seqlens[:-1]).clamp(min=1).unsqueeze(1).float()
    return (sums / counts).to(tokens.dtype)


def packed_max(tokens: Tensor, cu_seqlens: Tensor) -> Tensor:
    """Element-wise max over each sentence's token vectors: (N, H) -> (B, H)."""
    seg = segment_ids(cu_seqlens, tokens.shape[0])
    rows = cu_seqlens.shape[0] - 1
    out = torch.full((rows, tokens.shape[1]), float("-inf"), dtype=tokens.dtype, device=tokens.device)
    return out.scatter_reduce(0, seg.unsqueeze(1).expand_as(tokens), tokens, reduce="amax", include_self=True)


def packed_cls(tokens: Tensor, cu_seqlens: Tensor) -> Tensor:
    """Each sentence's first token vector ([CLS] / <s>): (N, H) -> (B, H)."""
    return tokens[cu_seqlens[:-1].long()]


def packed_mean_sqrt_len(tokens: Tensor, cu_seqlens: Tensor) -> Tensor:
    """Each sentence's token sum over the square root of its length: (N, H) -> (B, H)."""
    counts = (cu_seqlens[1:] - cu_seqlens[:-1]).clamp(min=1).unsqueeze(1).float()
    return (packed_mean(tokens, cu_seqlens).float() * counts.sqrt()).to(tokens.dtype)


def packed_weightedmean(tokens: Tensor, cu_seqlens: Tensor, first: int = 0) -> Tensor:
    """Each sentence's mean with its i-th token weighted first + i (1-based): (N, H) -> (B, H).

    `first`: tokens dropped from the front of every sentence before packing (a prompt left out of
    pooling), which keep their positions.
    """
    seg, position = segment_positions(cu_seqlens, tokens.shape[0])
    weights = (position + 1 + first).float().unsqueeze(1)
    rows = cu_seqlens.shape[0] - 1
    sums = torch.zeros((rows, tokens.shape[1]), dtype=torch.float32, device=tokens.device)
    sums.index_add_(0, seg, tokens.float() * weights)
    totals = torch.zeros((rows, 1), dtype=torch.float32, device=tokens.device).index_add_(0, seg, weights)
    return (sums / totals.clamp(min=1e-9)).to(tokens.dtype)


def packed_lasttoken(tokens: Tensor, cu_seqlens: Tensor) -> Tensor:
    """Each sentence's last token vector: (N, H) -> (B, H)."""
    return tokens[cu_seqlens[1:].long() - 1]


PACKED_POOLING = {
    "mean": packed_mean, "max": packed_max, "cls": packed_cls, "mean_sqrt_len_tokens": packed_mean_sqrt_len,
    "weightedmean": packed_weightedmean, "lasttoken": packed_lasttoken,
}  # fmt: skip


def unpack(tokens: Tensor, cu_seqlens: Tensor, max_len: int) -> tuple[Tensor, Tensor]:
    """Packed (N, H) -> right-padded (B, T, H) and its (B, T) mask, for heads that need a grid."""
    seg, offset = segment_positions(cu_seqlens, tokens.shape[0])
    rows = cu_seqlens.shape[0] - 1
    grid = tokens.new_zeros((rows, max_len, tokens.shape[1]))
    grid[seg, offset] = tokens
    mask = torch.zeros((rows, max_len), dtype=torch.long, device=tokens.device)
    mask[seg, offset] = 1
    return grid, mask
