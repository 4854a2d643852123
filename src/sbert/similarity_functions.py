"""6.2's `sentence_transformers.similarity_functions` path: `SimilarityFunction` and the score functions."""

from __future__ import annotations

from sbert.util import (
    SimilarityFunction,
    cos_sim,
    dot_score,
    euclidean_sim,
    manhattan_sim,
    pairwise_cos_sim,
    pairwise_dot_score,
    pairwise_euclidean_sim,
    pairwise_manhattan_sim,
)

__all__ = ["SimilarityFunction", "cos_sim", "dot_score", "euclidean_sim", "manhattan_sim", "pairwise_cos_sim",
           "pairwise_dot_score", "pairwise_euclidean_sim", "pairwise_manhattan_sim"]  # fmt: skip
