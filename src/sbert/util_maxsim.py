"""sentence-transformers 6.2's `util.maxsim` family over sbert's one MaxSim (vectors/maxsim.py).

6.3's inputs (a padded 3-D tensor, a list of token matrices, or one 2-D matrix; optional token masks)
become the token sets sbert scores: a masked-out query token leaves the sum and a masked-out document
token leaves the max, which is what dropping them does; a padded 3-D batch without a mask has its all-zero
rows taken for padding, as 6.3 takes them. A fractional query mask weighs each token's
best match, as 6.3 multiplies by it: for a weight w >= 0, w * max_j(q . d_j) = max_j((w q) . d_j), so the
query token is scaled by its weight (a document mask keeps every token whose entry is not 0, as 6.3's
`.bool()` does). Half-precision inputs are widened to float32 before the dot products (6.3 computes them
in the input's dtype and widens the maxima): the scores agree to that dtype's rounding, never worse.
Scores come back as float32 torch tensors on the documents' device, as 6.3 returns them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from sbert.vectors.maxsim import DEFAULT_BUDGET, maxsim_matrix, maxsim_pairs


def _matrices(side: Any) -> list[Any]:
    """One side as a list of (tokens, dim) matrices: a 2-D input is one item, a 3-D input one per row."""
    if isinstance(side, list | tuple):
        return list(side)
    return [side] if side.ndim == 2 else list(side)


def _rows(matrix: Any) -> np.ndarray:
    """A token matrix as float32 numpy (half and bf16 widened, as 6.2 accumulates in float32)."""
    if isinstance(matrix, Tensor):
        return matrix.detach().float().cpu().numpy()
    return np.asarray(matrix, dtype=np.float32)


def token_sets(side: Any, mask: Any, argument: str, weighs: bool = False) -> list[np.ndarray]:
    """The side's token matrices with its masked-out (0) tokens dropped; `weighs`: the others scaled by the mask.

    Without `weighs` (documents) any non-zero entry keeps its token. Negative weights are refused: a
    scaled token's best match would then be its worst.
    """
    matrices = [_rows(m) for m in _matrices(side)]
    if mask is None and not isinstance(side, list | tuple) and side.ndim == 3:
        return [m[np.any(m != 0, axis=1)] for m in matrices]  # a padded batch: all-zero rows are padding (6.3)
    if mask is None:
        return matrices
    rows = mask if isinstance(mask, list | tuple) else [mask] if mask.ndim == 1 else list(mask)
    masks = [_rows(m) for m in rows]
    if len(masks) == 1 and len(matrices) > 1:  # one mask for every item (6.2 expands it)
        masks = masks * len(matrices)
    if len(masks) != len(matrices):
        raise ValueError(f"{argument} has {len(masks)} rows for {len(matrices)} items")
    if any((m < 0).any() for m in masks):
        raise ValueError(f"{argument}: token weights must be >= 0 (0 leaves a token out)")
    kept = [(t, m[: len(t)]) for t, m in zip(matrices, masks, strict=True)]
    if not weighs:
        return [t[w != 0] for t, w in kept]
    return [t[w != 0] * w[w != 0, None] for t, w in kept]


def _device(*sides: Any) -> torch.device:
    """The documents' device (6.2's rule), else the queries', else the CPU."""
    for side in sides:
        items = side if isinstance(side, list | tuple) else [side]
        if items and isinstance(items[0], Tensor):
            return items[0].device
    return torch.device("cpu")


def maxsim(a: list | np.ndarray | Tensor, b: list | np.ndarray | Tensor, a_mask: Tensor | None = None,
           b_mask: Tensor | None = None, chunk_elements: int | None = None, length_normalize: bool = False,
           device: str | torch.device | None = None) -> Tensor:  # fmt: skip
    """(len(a), len(b)) float32: MaxSim of every query with every document (MeanMaxSim with length_normalize).

    `device` is accepted for 6.2's signature; sbert scores on the CPU in blocks of `chunk_elements` floats.
    """
    queries, documents = token_sets(a, a_mask, "a_mask", weighs=True), token_sets(b, b_mask, "b_mask")
    scores = maxsim_matrix(queries, documents, mean=length_normalize, budget=chunk_elements or DEFAULT_BUDGET)
    return torch.from_numpy(scores).to(_device(b, a))


def maxsim_pairwise(a: list | np.ndarray | Tensor, b: list | np.ndarray | Tensor, a_mask: Tensor | None = None,
                    b_mask: Tensor | None = None, chunk_elements: int | None = None, length_normalize: bool = False,
                    device: str | torch.device | None = None) -> Tensor:  # fmt: skip
    """(n,) float32: MaxSim of query i with document i (MeanMaxSim with length_normalize)."""
    queries, documents = token_sets(a, a_mask, "a_mask", weighs=True), token_sets(b, b_mask, "b_mask")
    if len(queries) != len(documents):
        raise ValueError(f"`a` and `b` must hold the same number of items to score as pairs, got {len(queries)} "
                         f"and {len(documents)}.")  # fmt: skip
    return torch.from_numpy(maxsim_pairs(queries, documents, mean=length_normalize)).to(_device(b, a))


def mean_maxsim(a: list | np.ndarray | Tensor, b: list | np.ndarray | Tensor, a_mask: Tensor | None = None,
                b_mask: Tensor | None = None, chunk_elements: int | None = None, length_normalize: bool = True,
                device: str | torch.device | None = None) -> Tensor:  # fmt: skip
    """`maxsim` divided by each query's real token count (6.2's MeanMaxSim)."""
    return maxsim(a, b, a_mask, b_mask, chunk_elements, length_normalize, device)


def mean_maxsim_pairwise(a: list | np.ndarray | Tensor, b: list | np.ndarray | Tensor, a_mask: Tensor | None = None,
                         b_mask: Tensor | None = None, chunk_elements: int | None = None,
                         length_normalize: bool = True,
                         device: str | torch.device | None = None) -> Tensor:  # fmt: skip
    """`maxsim_pairwise` divided by each query's real token count."""
    return maxsim_pairwise(a, b, a_mask, b_mask, chunk_elements, length_normalize, device)


def compute_count_vector(embeddings: Tensor) -> Tensor:
    """int32 (vocab,): how many rows are non-zero in each dimension (1-D input: 0/1 per dimension)."""
    if embeddings.dim() not in (1, 2):
        raise ValueError(f"Expected 1D or 2D tensor, got {embeddings.dim()}D")
    dense = embeddings.to_dense() if embeddings.is_sparse else embeddings
    return (dense != 0).reshape(-1, dense.shape[-1]).sum(dim=0).to(torch.int32)
