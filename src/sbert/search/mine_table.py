"""`mine_hard_negatives(dataset, model, ...)`: sentence-transformers 6.3's hard-negative mining of a pair table.

Selection as 6.3 documents it: the corpus is the given texts plus every positive (deduplicated); each
distinct anchor is searched against it (unit vectors, the model's similarity) for `range_max` candidates
plus room for its positives and its own text; the anchor's own text is never its negative, nor are its
positives (unless `include_positives`), then candidates above `max_score`, below `min_score`, or within
`absolute_margin` / `relative_margin` of the anchor's weakest positive are dropped (every score from the
cross-encoder when one is given); ranks before `range_min` are skipped; the `num_negatives` best (`top`)
or a random draw (`random`, Python's `random`, sorted by score) are kept.
Rows come back as `triplet`, `n-tuple`, `labeled-pair` or `labeled-list`, as in 6.3.
`sbert mine-negatives` (search/negatives.py) is sbert's own miner for files, resumable by blocks.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import torch

from sbert.errors import SbertError
from sbert.native import native
from sbert.search.exact import semantic_search
from sbert.search.mine_rows import ROW_BUILDERS, Mined
from sbert.similarity import pairwise_similarity, similarity_of

FORMATS = tuple(ROW_BUILDERS)


def _range_max(given: int | None, range_min: int, num_negatives: int, most_positives: int, filtered: bool) -> int:
    """6.3's default depth: room for the positives and the negatives, ten times the negatives when filtering."""
    if given is not None:
        return given
    return range_min + num_negatives * (10 if filtered else 1) + most_positives


def _check(range_min: int, range_max: int, num_negatives: int, output_format: str) -> None:
    if num_negatives < 1:
        raise ValueError(f"num_negatives must be at least 1, got num_negatives={num_negatives}.")
    if range_min < 0:
        raise ValueError(f"range_min must be non-negative, got range_min={range_min}.")
    if range_min >= range_max:
        raise ValueError(f"range_min must be smaller than range_max, got range_min={range_min} and "
                         f"range_max={range_max}.")  # fmt: skip
    if num_negatives > range_max - range_min:
        raise ValueError(
            f"Cannot mine {num_negatives} negatives per query: only {range_max - range_min} "
            f"candidates remain after skipping the first range_min={range_min} of range_max={range_max}."
        )
    if output_format not in FORMATS:
        raise ValueError(f"Invalid output_format: {output_format}. Must be one of {', '.join(map(repr, FORMATS))}.")


def _unit(x: Any) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


Found = tuple[torch.Tensor, torch.Tensor, np.ndarray, np.ndarray]


def _candidates(model: Any, queries: list[str], corpus: list[str], depth: int, prompts: tuple[Any, ...],
                batch_size: int, verbose: bool) -> Found:  # fmt: skip
    """Each query's `depth` best corpus rows (scores, indices; -inf / -1 past the corpus) and both sides' vectors."""
    query_name, query_prompt, corpus_name, corpus_prompt = prompts
    encoder, name = native(model), similarity_of(model)
    c = _unit(encoder.encode(corpus, batch_size=batch_size, task="document", prompt_name=corpus_name,
                             prompt=corpus_prompt, show_progress=verbose))  # fmt: skip
    q = _unit(encoder.encode(queries, batch_size=batch_size, task="query", prompt_name=query_name, prompt=query_prompt,
                             show_progress=verbose))  # fmt: skip
    # The project's exact search: the corpus scored a block at a time, never a whole queries x corpus matrix.
    found, rows = semantic_search(q, c, min(depth, len(corpus)), score_function=name)
    scores, indices = torch.from_numpy(np.ascontiguousarray(found)), torch.from_numpy(np.ascontiguousarray(rows))
    missing = depth - scores.size(1)
    if missing > 0:
        scores = torch.cat([scores, scores.new_full((len(queries), missing), -float("inf"))], dim=1)
        indices = torch.cat([indices, indices.new_full((len(queries), missing), -1)], dim=1)
    return scores, indices, q, c


def _filter(scores: torch.Tensor, floor: torch.Tensor, settings: dict[str, Any]) -> None:
    """Set to -inf, in place, candidates past the score limits or within a margin of the weakest positive."""
    if settings["absolute_margin"] is not None:
        scores[scores + settings["absolute_margin"] > floor[:, None]] = -float("inf")
    if settings["relative_margin"] is not None:
        scores[scores > (floor - floor.abs() * settings["relative_margin"])[:, None]] = -float("inf")
    if settings["max_score"] is not None:
        scores[scores > settings["max_score"]] = -float("inf")
    if settings["min_score"] is not None:
        scores[scores < settings["min_score"]] = -float("inf")


def _choose(scores: torch.Tensor, indices: torch.Tensor, range_min: int, range_max: int, num_negatives: int,
            sampling_strategy: str) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """The kept negatives per query (best first): the top ones after range_min, or a random draw among them."""
    rows = torch.arange(len(scores))[:, None]
    best, local = torch.topk(scores, k=range_max, dim=1)
    picked = indices[rows, local][:, range_min:]
    best = best[:, range_min:]
    if sampling_strategy == "top":
        return best[:, :num_negatives], picked[:, :num_negatives]
    if sampling_strategy != "random":
        raise ValueError(f"sampling_strategy must be 'top' or 'random', got {sampling_strategy!r}")
    options = (picked.size(1) - best.isinf().sum(1)).clamp(min=num_negatives)
    drawn = torch.tensor([random.sample(range(int(n)), k=num_negatives) for n in options]).reshape(-1, num_negatives)
    best, picked = best[rows, drawn], picked[rows, drawn]
    best, order = best.sort(dim=1, descending=True)
    return best, picked[rows, order]


def _columns(dataset: Any, anchor: str | None, positive: str | None) -> tuple[str, str, list[str], list[str]]:
    """The anchor and positive column names (the first two by default) and their texts."""
    names = list(dataset.column_names)
    anchor = anchor if anchor in names else names[0]
    if positive not in names:
        if len(names) < 2:
            raise ValueError("Dataset must contain at least two columns to select the positive column automatically.")
        positive = names[1]
    assert anchor is not None and positive is not None
    return anchor, positive, [str(t) for t in dataset[anchor]], [str(t) for t in dataset[positive]]


def _rescore(cross_encoder: Any, queries: list[str], corpus: list[str], indices: torch.Tensor,
             pairs: list[tuple[int, int]], batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """The cross-encoder's scores of every candidate (-inf past the corpus) and of every (query, positive) pair."""
    scorer = native(cross_encoder)
    flat = [(queries[q], corpus[int(i)]) for q in range(len(queries)) for i in indices[q]]
    scores = torch.from_numpy(np.asarray(scorer.predict(flat, batch_size=batch_size), np.float32)).view(indices.shape)
    positives = np.asarray(scorer.predict([(queries[q], corpus[p]) for q, p in pairs], batch_size=batch_size))
    return scores.clone(), torch.from_numpy(positives.astype(np.float32))


def _index_pairs(
    all_queries: list[str], all_positives: list[str], corpus: list[str] | None, include_positives: bool
) -> tuple[list[str], list[str], list[list[int]], list[int]]:
    """The distinct anchors, the searched texts, each anchor's positives (text indices) and its own text's index.

    An anchor's own text (-1 where the corpus lacks it) is never its negative, as in 6.3; with
    `include_positives`, an anchor that is its own positive is kept as one.
    """
    queries = list(dict.fromkeys(all_queries))
    texts = list(dict.fromkeys([*(corpus if corpus is not None else all_positives), *all_positives]))
    where, at = {t: i for i, t in enumerate(texts)}, {q: i for i, q in enumerate(queries)}
    positives: list[list[int]] = [[] for _ in queries]
    for q, p in zip(all_queries, all_positives, strict=True):
        if where[p] not in positives[at[q]]:
            positives[at[q]].append(where[p])
    own_text = [where.get(q, -1) for q in queries]
    if include_positives:
        for q, p in zip(all_queries, all_positives, strict=True):
            own_text[at[q]] = -1 if q == p else own_text[at[q]]
    return queries, texts, positives, own_text


def mine_hard_negatives(
    dataset: Any,
    model: Any,
    anchor_column_name: str | None = None,
    positive_column_name: str | None = None,
    corpus: list[str] | None = None,
    cross_encoder: Any = None,
    range_min: int = 0,
    range_max: int | None = None,
    max_score: float | None = None,
    min_score: float | None = None,
    absolute_margin: float | None = None,
    relative_margin: float | None = None,
    num_negatives: int = 3,
    sampling_strategy: str = "top",
    query_prompt_name: str | None = None,
    query_prompt: str | None = None,
    corpus_prompt_name: str | None = None,
    corpus_prompt: str | None = None,
    include_positives: bool = False,
    output_format: str = "triplet",
    output_scores: bool = False,
    batch_size: int = 32,
    faiss_batch_size: int = 16384,
    use_faiss: bool = False,
    use_multi_process: list[str] | bool = False,
    verbose: bool = True,
    cache_folder: str | None = None,
    as_triplets: bool | None = None,
    margin: float | None = None,
) -> Any:
    """Hard negatives for each (anchor, positive) row of `dataset`, as a `datasets.Dataset` (module docstring).

    The search is exact (faiss and multi-process options change nothing here); `cache_folder` is not used.
    """
    table_class = _dataset_class()
    if len(dataset) == 0:
        raise ValueError("The dataset is empty. Please provide a non-empty dataset.")
    output_format = ("triplet" if as_triplets else "n-tuple") if as_triplets is not None else output_format
    output_format = "n-tuple" if include_positives else output_format  # 6.2 keeps the ranking order so
    absolute_margin = margin if margin is not None else absolute_margin
    anchor, positive, all_queries, all_positives = _columns(dataset, anchor_column_name, positive_column_name)
    queries, texts, positives, own_text = _index_pairs(all_queries, all_positives, corpus, include_positives)
    most = max(Counter(all_queries).values())  # as 6.3: the most rows one anchor has, its duplicate pairs counted
    settings = {"absolute_margin": absolute_margin, "relative_margin": relative_margin, "max_score": max_score,
                "min_score": min_score}  # fmt: skip
    filtered = any(v is not None for k, v in settings.items() if k != "min_score") or (
        cross_encoder is not None and min_score is not None)  # fmt: skip
    range_max = _range_max(range_max, range_min, num_negatives, most, filtered)
    _check(range_min, range_max, num_negatives, output_format)
    prompts = (query_prompt_name, query_prompt, corpus_prompt_name, corpus_prompt)
    depth = range_max + most + 1  # 6.3's room: the positives and the anchor's own text
    scores, indices, q_vecs, c_vecs = _candidates(model, queries, texts, depth, prompts, batch_size, verbose)
    pairs = [(q, p) for q, rows in enumerate(positives) for p in rows]
    positive_scores = torch.from_numpy(pairwise_similarity(q_vecs[[q for q, _ in pairs]], c_vecs[[p for _, p in pairs]],
                                                           similarity_of(model)).astype(np.float32))  # fmt: skip
    if cross_encoder is not None:  # 6.3 orders and scores by the cross-encoder whenever one is given
        scores, positive_scores = _rescore(cross_encoder, queries, texts, indices, pairs, batch_size)
    scores[indices == -1] = -float("inf")
    scores[indices == torch.tensor(own_text)[:, None]] = -float("inf")
    if not include_positives:
        own = [torch.isin(indices[q], torch.tensor(positives[q])) for q in range(len(queries))]
        scores[torch.stack(own)] = -float("inf")
    counts = torch.tensor([len(p) for p in positives])
    floor = torch.stack([part.min() for part in positive_scores.split(counts.tolist())])
    _filter(scores, floor, settings)
    negative_scores, negatives = _choose(scores, indices, range_min, range_max, num_negatives, sampling_strategy)
    mined = Mined(
        anchor, positive, queries, texts, positives, positive_scores, negative_scores, negatives, output_scores
    )
    rows = ROW_BUILDERS[output_format](mined)
    if verbose and not rows[anchor]:
        print("mine_hard_negatives: no row found enough negatives; widen range_max or loosen the margins")
    return table_class.from_dict(rows)


def _dataset_class() -> Any:
    """`datasets.Dataset`, which the mined table is, or a one-line error naming the package."""
    try:
        from datasets import Dataset
    except ImportError:
        raise SbertError("mine_hard_negatives returns a datasets.Dataset: pip install datasets") from None
    return Dataset
