"""sentence-transformers 6.2's gathers and token-matrix padding, for losses people write themselves.

A custom in-batch loss under torchrun calls `util.all_gather_with_grad(embeddings)` to score against
every rank's rows; a late-interaction loss stacks ragged token matrices with their masks. These answer
as 6.2's do over sbert's one gather (`sbert.losses.gather.gather_rows`: ranks may differ in row count
and token width), and return the input unchanged without a process group.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional

from sbert.losses.gather import gather_rows


def all_gather(tensor: Tensor, with_grad: bool = False) -> Tensor:
    """Every rank's `tensor` concatenated along the first axis; this rank's rows keep their gradient.

    With `with_grad` the other ranks' rows carry theirs back too (their backward sums into their rank).
    """
    gathered, start = gather_rows(tensor if with_grad else tensor.detach())
    if with_grad or gathered is tensor or not tensor.requires_grad:
        return gathered
    end = start + tensor.shape[0]
    return torch.cat([gathered[:start], tensor, gathered[end:]])


def all_gather_with_grad(tensor: Tensor) -> Tensor:
    """`all_gather(tensor, with_grad=True)`."""
    return all_gather(tensor, with_grad=True)


def all_gather_padded(tensor: Tensor, mask: Tensor, with_grad: bool = False) -> tuple[Tensor, Tensor]:
    """(B, T, D) token embeddings and their (B, T) mask from every rank, the token axis padded to the widest.

    The padding is zeros in the embeddings and False (0) in the mask; the mask carries no gradient.
    """
    gathered = all_gather(tensor, with_grad)
    masks, _ = gather_rows(mask.detach())
    return gathered, masks


def stack_padded_token_embeddings(embeddings: list[Tensor], masks: list[Tensor]) -> tuple[Tensor, Tensor]:
    """(B, T_i, D) columns stacked into (B, N, T_max, D), their (B, T_i) masks into (B, N, T_max)."""
    width = max(e.shape[1] for e in embeddings)
    return (torch.stack([_pad_tokens(e, width) for e in embeddings], dim=1),
            torch.stack([_pad_tokens(m, width) for m in masks], dim=1))  # fmt: skip


def cat_padded_token_embeddings(embeddings: list[Tensor], masks: list[Tensor]) -> tuple[Tensor, Tensor]:
    """(B_i, T_i, D) chunks concatenated into (sum B_i, T_max, D), their masks into (sum B_i, T_max)."""
    width = max(e.shape[1] for e in embeddings)
    return (torch.cat([_pad_tokens(e, width) for e in embeddings]),
            torch.cat([_pad_tokens(m, width) for m in masks]))  # fmt: skip


def _pad_tokens(rows: Tensor, width: int) -> Tensor:
    """`rows` with its token axis (the second) padded with zeros (False for a mask) up to `width`."""
    missing = width - rows.shape[1]
    if missing == 0:
        return rows
    return functional.pad(rows, [0, 0] * (rows.dim() - 2) + [0, missing])
