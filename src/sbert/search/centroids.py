"""Spherical k-means for token vectors (a PLAID-style index's centroids): trained on a sample, assigned in blocks."""

from __future__ import annotations

import numpy as np

# Points per centroid in the training sample: enough for stable centroids, a small cost next to assignment.
SAMPLE_PER_CENTROID = 32
_BLOCK = 65_536  # tokens per assignment block: (block, k) scores stay bounded


def token_centroids(tokens: np.ndarray, k: int, iterations: int = 8, seed: int = 0) -> np.ndarray:
    """float32 (k', dim) unit centroids, k' = min(k, number of tokens), from a seeded sample of `tokens`."""
    rng = np.random.default_rng(seed)
    k = max(1, min(k, len(tokens)))
    take = min(len(tokens), k * SAMPLE_PER_CENTROID)
    sample = np.asarray(tokens[np.sort(rng.choice(len(tokens), take, replace=False))], dtype=np.float32)
    centroids = sample[rng.choice(len(sample), k, replace=False)].copy()
    for _ in range(iterations):
        labels = assign(sample, centroids)
        sums = np.zeros_like(centroids)
        np.add.at(sums, labels, sample)
        empty = np.bincount(labels, minlength=k) == 0
        sums[empty] = sample[rng.choice(len(sample), int(empty.sum()))]  # reseed a dead centroid
        centroids = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    return centroids


def assign(tokens: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """int32 (n,): the centroid of largest dot product for each token."""
    out = np.empty(len(tokens), dtype=np.int32)
    for start in range(0, len(tokens), _BLOCK):
        block = np.asarray(tokens[start : start + _BLOCK], dtype=np.float32)
        out[start : start + _BLOCK] = np.argmax(block @ centroids.T, axis=1)
    return out
