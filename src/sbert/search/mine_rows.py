"""The rows `mine_hard_negatives` returns, in each of sentence-transformers 6.2's output formats.

`Mined` holds the mining's result per distinct anchor; each builder turns it into the columns of a
`datasets.Dataset`, skipping negatives that were filtered out (a score of -inf) as 6.2 does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

INF = -float("inf")


@dataclass
class Mined:
    """Distinct anchors, the corpus, each anchor's positives (corpus rows, in order), and the kept negatives."""

    anchor_column: str
    positive_column: str
    queries: list[str]
    corpus: list[str]
    positives: list[list[int]]  # per query
    positive_scores: torch.Tensor  # one per (query, positive), queries in order
    negative_scores: torch.Tensor  # (queries, num_negatives), -inf where none was found
    negatives: torch.Tensor  # (queries, num_negatives) corpus rows
    with_scores: bool

    def per_positive(self) -> list[tuple[int, int, float]]:
        """(query, positive corpus row, positive score) for every pair, in order."""
        out, k = [], 0
        for q, rows in enumerate(self.positives):
            for row in rows:
                out.append((q, row, float(self.positive_scores[k])))
                k += 1
        return out

    def found(self, q: int) -> list[tuple[int, float]]:
        """Query q's kept negatives (corpus row, score), best first."""
        return [(int(i), float(s)) for i, s in zip(self.negatives[q], self.negative_scores[q], strict=True) if s != INF]


def triplets(m: Mined) -> dict[str, list[Any]]:
    """One row per (anchor, positive, negative)."""
    data: dict[str, list[Any]] = {m.anchor_column: [], m.positive_column: [], "negative": []}
    if m.with_scores:
        data["scores"] = []
    for q, p, p_score in m.per_positive():
        for n, n_score in m.found(q):
            data[m.anchor_column].append(m.queries[q])
            data[m.positive_column].append(m.corpus[p])
            data["negative"].append(m.corpus[n])
            if m.with_scores:
                data["scores"].append([p_score, n_score])
    return data


def n_tuples(m: Mined) -> dict[str, list[Any]]:
    """One row per (anchor, positive) with all its negatives as negative_1.. (rows short of negatives dropped)."""
    width = m.negatives.size(1)
    data: dict[str, list[Any]] = {m.anchor_column: [], m.positive_column: [],
                                  **{f"negative_{i}": [] for i in range(1, width + 1)}}  # fmt: skip
    if m.with_scores:
        data["scores"] = []
    for q, p, p_score in m.per_positive():
        found = m.found(q)
        if len(found) < width:
            continue
        data[m.anchor_column].append(m.queries[q])
        data[m.positive_column].append(m.corpus[p])
        for i, (n, _) in enumerate(found, start=1):
            data[f"negative_{i}"].append(m.corpus[n])
        if m.with_scores:
            data["scores"].append([p_score, *(s for _, s in found)])
    return data


def labeled_pairs(m: Mined) -> dict[str, list[Any]]:
    """Per anchor: its positives labelled 1, then its negatives labelled 0 (or their scores, `score`)."""
    key = "score" if m.with_scores else "label"
    data: dict[str, list[Any]] = {m.anchor_column: [], m.positive_column: [], key: []}
    pairs = m.per_positive()
    for q in range(len(m.queries)):
        rows = [(p, s, 1) for query, p, s in pairs if query == q] + [(n, s, 0) for n, s in m.found(q)]
        for row, score, label in rows:
            data[m.anchor_column].append(m.queries[q])
            data[m.positive_column].append(m.corpus[row])
            data[key].append(score if m.with_scores else label)
    return data


def labeled_lists(m: Mined) -> dict[str, list[Any]]:
    """One row per (anchor, positive) with any negative: [positive, negatives...] and labels [1, 0, ...]."""
    key = "scores" if m.with_scores else "labels"
    data: dict[str, list[Any]] = {m.anchor_column: [], m.positive_column: [], key: []}
    for q, p, p_score in m.per_positive():
        found = m.found(q)
        if not found:
            continue
        data[m.anchor_column].append(m.queries[q])
        data[m.positive_column].append([m.corpus[p], *(m.corpus[n] for n, _ in found)])
        data[key].append([p_score, *(s for _, s in found)] if m.with_scores else [1] + [0] * len(found))
    return data


ROW_BUILDERS: dict[str, Callable[[Mined], dict[str, list[Any]]]] = {
    "triplet": triplets, "n-tuple": n_tuples, "labeled-pair": labeled_pairs, "labeled-list": labeled_lists,
}  # fmt: skip
