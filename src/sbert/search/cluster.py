"""Clustering sentence vectors: fast community detection, k-means and agglomerative clustering."""

from __future__ import annotations

import numpy as np

from sbert.similarity import unit_rows


def community_detection(
    embeddings: np.ndarray, threshold: float = 0.75, min_size: int = 10, chunk_size: int = 2048
) -> list[list[int]]:
    """Groups of sentences whose cosine to a central sentence is >= threshold, largest first.

    Every sentence with at least `min_size` neighbours (itself included) above the threshold
    proposes its neighbourhood (by decreasing similarity); proposals are taken largest first, a
    proposal whose centre is already grouped is dropped, and each sentence joins at most one group,
    the centre first in it. The groups, so trimmed, are ordered largest first again: the rule of
    sentence-transformers' `util.community_detection`, with the same groups. Memory stays at
    chunk_size x n scores.
    """
    if not min_size > 0:
        raise ValueError(f"min_size must be positive, got {min_size}")
    e = unit_rows(embeddings)
    proposals: list[tuple[int, list[int]]] = []  # (centre, its neighbours by decreasing similarity)
    for start in range(0, len(e), chunk_size):
        scores = e[start : start + chunk_size] @ e.T
        for offset, row in enumerate(scores):
            members = np.flatnonzero(row >= threshold)
            if len(members) >= min_size:
                ranked = members[np.argsort(-row[members], kind="stable")]
                proposals.append((start + offset, [int(i) for i in ranked]))
    proposals.sort(key=lambda p: len(p[1]), reverse=True)
    taken: set[int] = set()
    groups: list[list[int]] = []
    for centre, neighbours in proposals:
        free = [i for i in neighbours if i not in taken]
        if centre in taken or len(free) < min_size:
            continue
        group: list[int] = [centre, *(i for i in free if i != centre)]
        groups.append(group)
        taken.update(group)
    return sorted(groups, key=len, reverse=True)


def kmeans(embeddings: np.ndarray, clusters: int, seed: int = 0) -> np.ndarray:
    """k-means on unit vectors (scikit-learn): one cluster label per row."""
    from sklearn.cluster import KMeans

    return KMeans(n_clusters=clusters, random_state=seed, n_init="auto").fit_predict(unit_rows(embeddings))


def agglomerative(
    embeddings: np.ndarray, clusters: int | None = None, distance_threshold: float | None = None
) -> np.ndarray:
    """Average-linkage clustering on cosine distance (scikit-learn): one label per row.

    Give either a cluster count or a cosine-distance threshold (1 - cosine) at which to stop merging.
    """
    from sklearn.cluster import AgglomerativeClustering

    if (clusters is None) == (distance_threshold is None):
        raise ValueError("give exactly one of clusters and distance_threshold")
    model = AgglomerativeClustering(
        n_clusters=clusters, distance_threshold=distance_threshold, metric="cosine", linkage="average"
    )
    return np.asarray(model.fit_predict(unit_rows(embeddings)))
