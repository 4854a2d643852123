"""The math of static distillation: PCA, SIF weights, and the fit of the table to teacher vectors.

All pure functions over numpy / scipy arrays; only `fit_table` uses torch (for Adam and autograd).
Shapes: V vocabulary, D teacher dimension, d table dimension, n corpus sentences.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

# SIF's a (Arora et al. 2017): weight a / (a + p(token)). In development runs (STSb dev, after the map
# fit) 3e-3 beat 1e-3 and 1e-4 (82.9, 82.1, 78.3); without a fit 1e-3 was best, but the fit is the default.
SIF_A = 3e-3
# Without a corpus, token probabilities come from a Zipf prior by rank, and SIF's a is model2vec's 1e-4:
# all-MiniLM-L6-v2, STSb test 66.1 (benchmarks/quality/static_tier.py; 3e-5 scored 66.7 there, not chosen on test).
ZIPF_A = 1e-4
FIT_BATCH = 512


def pca(x: np.ndarray, dim: int, fit_rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Centred PCA of the rows of x (V, D): (V, dim) projected rows and the (D, dim) basis.

    `fit_rows` (V bools): only those rows set the mean and the directions (all rows are projected).
    """
    sample = x if fit_rows is None else x[fit_rows]
    centred = x - sample.mean(axis=0, keepdims=True)
    fitted = centred if fit_rows is None else centred[fit_rows]
    # The covariance eigenvectors (D x D) are far cheaper than an SVD of a (V, D) matrix.
    values, vectors = np.linalg.eigh(fitted.T @ fitted)
    basis = vectors[:, np.argsort(values)[::-1][:dim]]
    return (centred @ basis).astype(np.float32), basis.astype(np.float32)


def uncentred_basis(x: np.ndarray, dim: int) -> np.ndarray:
    """(D, dim) top right singular vectors of x (n, D): x @ basis keeps x's cosines best in dim dims."""
    values, vectors = np.linalg.eigh(x.T @ x)
    return vectors[:, np.argsort(values)[::-1][:dim]].astype(np.float32)


def token_counts(matrix: sp.csr_matrix) -> np.ndarray:
    """(V,) how often each token occurs in the corpus (from the averaging matrix's pattern)."""
    return np.bincount(matrix.indices, minlength=matrix.shape[1]).astype(np.float64)


def zipf_probabilities(kept: np.ndarray) -> np.ndarray:
    """(V,) p ~ 1 / (rank + 1) by vocabulary id among the `kept` tokens (V bools), normalised; 0 for the rest.

    The prior when no corpus says how common a token is. The rank counts only tokens text can
    produce: BERT's 994 `[unusedN]` placeholders sit at ids 1-998, before its most frequent real
    tokens, and ranking those at 1,000+ flattened their weights (STSb 61.2 against 66.1).
    """
    rank = np.cumsum(kept)
    inverse = np.where(kept, 1.0 / (rank + 1.0), 0.0)
    return inverse / inverse.sum()


def sif_weights(counts: np.ndarray, a: float = SIF_A) -> np.ndarray:
    """(V,) a / (a + p(t)) with add-one smoothed probabilities from corpus counts: frequent tokens count less."""
    return sif_from_probabilities((counts + 1.0) / (counts.sum() + len(counts)), a)


def sif_from_probabilities(p: np.ndarray, a: float) -> np.ndarray:
    """(V,) a / (a + p): SIF's weight of each token (Arora et al. 2017)."""
    return (a / (a + p)).astype(np.float32)


def fit_linear(mean_rows: np.ndarray, target: np.ndarray, ridge: float = 1e-3) -> np.ndarray:
    """(d, k) W minimising |mean_rows @ W - target|^2 + ridge |W|^2: the closed-form start of the fit."""
    gram = mean_rows.T @ mean_rows
    gram += ridge * np.trace(gram) / len(gram) * np.eye(len(gram), dtype=gram.dtype)
    return np.linalg.solve(gram, mean_rows.T @ target).astype(np.float32)


def fit_map(mean_rows: np.ndarray, target: np.ndarray, epochs: int, lr: float, seed: int = 0) -> np.ndarray:
    """(d, k) W maximising cos(mean_rows @ W, target), from the least-squares W.

    Least squares alone chases the targets' lengths, which cosine ignores: in development runs on
    STSb dev it left the plain table where it was (78.1 against 78.3); the cosine fit reached 82.1.
    """
    import torch

    rows = torch.from_numpy(np.ascontiguousarray(mean_rows, dtype=np.float32))
    return cosine_fit(fit_linear(mean_rows, target), lambda w, batch: rows[batch] @ w, target, epochs, lr, seed)


def fit_table(
    table: np.ndarray, matrix: sp.csr_matrix, target: np.ndarray, epochs: int, lr: float, seed: int = 0
) -> np.ndarray:
    """The table (V, d) after maximising cos(matrix @ table, target) row by row of the corpus.

    Only the rows of tokens in a batch get gradients; the others keep their distilled values.
    """
    import torch

    def predict(weights: torch.Tensor, batch: np.ndarray) -> torch.Tensor:
        return torch.sparse.mm(_torch_sparse(matrix[batch]), weights)  # (b, V) @ (V, d)

    return cosine_fit(table, predict, target, epochs, lr, seed)


def cosine_fit(
    start: np.ndarray, predict: Callable[[Any, np.ndarray], Any], target: np.ndarray, epochs: int, lr: float, seed: int
) -> np.ndarray:
    """`start` after Adam on 1 - cos(predict(weights, batch), target[batch]) over shuffled batches of 512."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    weights = torch.nn.Parameter(torch.from_numpy(np.array(start, dtype=np.float32)))
    optimizer = torch.optim.Adam([weights], lr=lr)
    goal = torch.from_numpy(np.ascontiguousarray(target, dtype=np.float32))
    for _ in range(epochs):
        order = torch.randperm(len(goal), generator=generator).numpy()
        for begin in range(0, len(order), FIT_BATCH):
            batch = order[begin : begin + FIT_BATCH]
            loss = 1 - torch.nn.functional.cosine_similarity(predict(weights, batch), goal[batch], dim=1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return weights.detach().numpy()


def _torch_sparse(matrix: sp.csr_matrix) -> object:
    import torch

    coo = matrix.tocoo()
    index = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
    return torch.sparse_coo_tensor(
        index, torch.from_numpy(coo.data.astype(np.float32)), coo.shape, check_invariants=False
    )
