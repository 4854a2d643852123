"""Similarity scores of torch rows, as sentence-transformers' util computes them (sbert.util re-exports them).

Below the losses and the util module alike, so a loss's default `similarity_fct` is the very function
`sbert.util.cos_sim` is. Inputs may be lists, numpy arrays or tensors; outputs are float tensors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor


def float_tensor(x: Any) -> Tensor:
    """A float tensor: lists of tensors or arrays are stacked, half floats widened (compat's classes use it too)."""
    if isinstance(x, list) and x and isinstance(x[0], Tensor):
        x = torch.stack([row.to_dense() if row.is_sparse else row for row in x])
    elif not isinstance(x, Tensor):
        x = torch.as_tensor(np.asarray(x))
    if x.is_sparse or x.layout == torch.sparse_csr:  # SparseEncoder's rows: scored dense, as 6.2 answers them
        x = x.to_dense()
    return x.float() if not x.is_floating_point() or x.dtype in (torch.float16, torch.bfloat16) else x


def as_rows(x: Any) -> Tensor:
    """`float_tensor` with a batch dimension (one row becomes a batch of one)."""
    x = float_tensor(x)
    return x.unsqueeze(0) if x.dim() == 1 else x


def normalize_embeddings(embeddings: Tensor) -> Tensor:
    """Each row divided by its L2 norm (a zero row stays zero); one 1-D row is normalised as itself."""
    return torch.nn.functional.normalize(float_tensor(embeddings), p=2, dim=-1)


def cos_sim(a: Any, b: Any) -> Tensor:
    """(n, m): the cosine of every row of `a` with every row of `b`."""
    return normalize_embeddings(as_rows(a)) @ normalize_embeddings(as_rows(b)).T


def dot_score(a: Any, b: Any) -> Tensor:
    """(n, m): the dot product of every row of `a` with every row of `b`."""
    return as_rows(a) @ as_rows(b).T


def pairwise_cos_sim(a: Any, b: Any) -> Tensor:
    """(n,): the cosine of row i of `a` with row i of `b` (a scalar tensor for two single rows)."""
    unit = [torch.nn.functional.normalize(float_tensor(x), p=2, dim=-1) for x in (a, b)]
    return (unit[0] * unit[1]).sum(dim=-1)


def pairwise_dot_score(a: Any, b: Any) -> Tensor:
    """(n,): the dot product of row i of `a` with row i of `b` (a scalar tensor for two single rows)."""
    return (float_tensor(a) * float_tensor(b)).sum(dim=-1)


def manhattan_sim(a: Any, b: Any) -> Tensor:
    """(n, m): minus the L1 distance of every pair of rows."""
    return -torch.cdist(as_rows(a), as_rows(b), p=1.0)


def euclidean_sim(a: Any, b: Any) -> Tensor:
    """(n, m): minus the L2 distance of every pair of rows."""
    return -torch.cdist(as_rows(a), as_rows(b), p=2.0)


def pairwise_euclidean_sim(a: Any, b: Any) -> Tensor:
    """(n,): minus the L2 distance of row i of `a` and row i of `b`."""
    return -torch.linalg.vector_norm(float_tensor(a) - float_tensor(b), ord=2, dim=-1)


def pairwise_manhattan_sim(a: Any, b: Any) -> Tensor:
    """(n,): minus the L1 distance of row i of `a` and row i of `b`."""
    return -(float_tensor(a) - float_tensor(b)).abs().sum(dim=-1)


pytorch_cos_sim = cos_sim  # sentence-transformers' older name


def pairwise_angle_sim(x: Any, y: Any) -> Tensor:
    """(n,): AnglE's similarity |cos(x_i, y_i) + sin(x_i, y_i)| of unit rows (Li & Li 2023, arXiv:2309.12871).

    The sine term pairs dimension j with j + D/2 (the rows read as complex numbers); an odd width gets a 0 appended.
    """
    x, y = as_rows(x), as_rows(y)
    if x.shape[1] % 2:
        x, y = (torch.nn.functional.pad(t, (0, 1)) for t in (x, y))
    x, y = (torch.nn.functional.normalize(t, p=2, dim=1) for t in (x, y))
    (x_re, x_im), (y_re, y_im) = torch.chunk(x, 2, dim=1), torch.chunk(y, 2, dim=1)
    cosines = (x * y).sum(dim=1)
    sines = (x_im * y_re - x_re * y_im).sum(dim=1)
    return (cosines + sines).abs()
