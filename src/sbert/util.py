"""sentence-transformers' `util` functions under the same names, arguments and return types.

Code written as `from sentence_transformers import util` runs with `from sbert import util`: scores come
back as torch tensors (on the inputs' device), hits as lists of `{"corpus_id", "score"}` dicts, pairs as
`[score, i, j]` lists, quantized codes as numpy arrays. Inputs may be lists, numpy arrays or tensors.
The arithmetic is sbert's own; where sbert's library functions already do the work (community
detection, quantization) these only convert types.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from sbert.device import default_device
from sbert.progress import LoggingHandler
from sbert.search.cluster import community_detection as _communities
from sbert.search.mine_table import mine_hard_negatives
from sbert.search.quantize import calibration_ranges
from sbert.search.quantize import quantize_embeddings as _quantize
from sbert.similarity import SimilarityFunction
from sbert.util_dataset import resolve_ids
from sbert.util_gather import (
    all_gather,
    all_gather_padded,
    all_gather_with_grad,
    cat_padded_token_embeddings,
    stack_padded_token_embeddings,
)
from sbert.util_maxsim import compute_count_vector, maxsim, maxsim_pairwise, mean_maxsim, mean_maxsim_pairwise
from sbert.util_runtime import (
    append_to_last_row,
    check_package_availability,
    disable_datasets_caching,
    disable_logging,
    disabled_tqdm,
    fullname,
    get_rank,
    get_world_size,
    import_from_string,
    is_accelerate_available,
    is_datasets_available,
    is_dist_initialized,
    is_training_available,
)
from sbert.vectors.scores import (
    as_rows,
    cos_sim,
    dot_score,
    euclidean_sim,
    float_tensor,
    manhattan_sim,
    normalize_embeddings,
    pairwise_angle_sim,
    pairwise_cos_sim,
    pairwise_dot_score,
    pairwise_euclidean_sim,
    pairwise_manhattan_sim,
    pytorch_cos_sim,
)

Scores = Callable[[Tensor, Tensor], Tensor]


def semantic_search(
    query_embeddings: Any,
    corpus_embeddings: Any,
    query_chunk_size: int = 100,
    corpus_chunk_size: int = 500000,
    top_k: int = 10,
    score_function: Scores = cos_sim,
) -> list[list[dict[str, int | float]]]:
    """For each query, its `top_k` corpus rows by `score_function`, best first: `{"corpus_id", "score"}` dicts.

    The corpus is scored `corpus_chunk_size` rows and the queries `query_chunk_size` rows at a time.
    """
    queries, corpus = as_rows(query_embeddings), as_rows(corpus_embeddings)
    corpus = corpus.to(queries.device)
    best: list[list[tuple[float, int]]] = [[] for _ in range(len(queries))]
    for q0 in range(0, len(queries), query_chunk_size):
        for c0 in range(0, len(corpus), corpus_chunk_size):
            scores = score_function(queries[q0 : q0 + query_chunk_size], corpus[c0 : c0 + corpus_chunk_size])
            values, ids = torch.topk(scores, min(top_k, scores.shape[1]), dim=1, largest=True, sorted=False)
            for row, (vals, idx) in enumerate(zip(values.tolist(), ids.tolist(), strict=True)):
                heap = best[q0 + row]
                for score, corpus_id in zip(vals, idx, strict=True):  # a bounded heap: the top_k so far
                    item = (score, c0 + corpus_id)
                    heapq.heappush(heap, item) if len(heap) < top_k else heapq.heappushpop(heap, item)
    return [[{"corpus_id": i, "score": s} for s, i in sorted(heap, key=lambda t: -t[0])] for heap in best]


def paraphrase_mining_embeddings(
    embeddings: Any,
    query_chunk_size: int = 5000,
    corpus_chunk_size: int = 100000,
    max_pairs: int = 500000,
    top_k: int = 100,
    score_function: Scores = cos_sim,
) -> list[list[float | int]]:
    """The most similar pairs `[score, i, j]` (i < j), best first: each row keeps its `top_k` best partners."""
    rows = as_rows(embeddings)
    pairs: dict[tuple[int, int], float] = {}
    hits = semantic_search(rows, rows, query_chunk_size, corpus_chunk_size, top_k + 1, score_function)
    for i, row_hits in enumerate(hits):
        # A sentence is not its own paraphrase; each row gives at most top_k partners, also when a repeated
        # sentence ties with the row itself and pushes it out of the top_k + 1.
        partners = [hit for hit in row_hits if int(hit["corpus_id"]) != i][:top_k]
        for hit in partners:
            j = int(hit["corpus_id"])
            pairs.setdefault((min(i, j), max(i, j)), float(hit["score"]))
    ranked = sorted(pairs.items(), key=lambda kv: -kv[1])[:max_pairs]
    return [[score, i, j] for (i, j), score in ranked]


def paraphrase_mining(
    model: Any,
    sentences: Sequence[str],
    show_progress_bar: bool = False,
    batch_size: int = 32,
    query_chunk_size: int = 5000,
    corpus_chunk_size: int = 100000,
    max_pairs: int = 500000,
    top_k: int = 100,
    score_function: Scores = cos_sim,
    truncate_dim: int | None = None,
    prompt_name: str | None = None,
    prompt: str | None = None,
) -> list[list[float | int]]:
    """`sentences` embedded by `model`, then `paraphrase_mining_embeddings`."""
    embeddings = model.encode(list(sentences), batch_size=batch_size, show_progress=show_progress_bar,
                              truncate_dim=truncate_dim, prompt_name=prompt_name, prompt=prompt)  # fmt: skip
    return paraphrase_mining_embeddings(embeddings, query_chunk_size, corpus_chunk_size, max_pairs, top_k,
                                        score_function)  # fmt: skip


def community_detection(
    embeddings: Any,
    threshold: float = 0.75,
    min_community_size: int = 10,
    batch_size: int = 1024,
    show_progress_bar: bool = False,
) -> list[list[int]]:
    """Groups whose cosine to a central row is >= `threshold`, largest first, the central row first in each."""
    rows = as_rows(embeddings).detach().cpu().numpy()
    return _communities(rows, threshold, min_community_size, batch_size)


def quantize_embeddings(
    embeddings: Any,
    precision: str,
    ranges: np.ndarray | None = None,
    calibration_embeddings: Any = None,
) -> np.ndarray:
    """`embeddings` as float32, int8, uint8, binary or ubinary codes (sbert.search.quantize).

    One 1-D row gives 1-D codes; a list of token matrices (a multi-vector model's output) gives a list of
    code matrices, int8 ranges taken once from all their tokens (or the calibration embeddings).
    """
    if isinstance(embeddings, list) and not embeddings:
        return []  # type: ignore[return-value]
    calibration = None if calibration_embeddings is None else as_rows(calibration_embeddings).detach().cpu().numpy()
    if isinstance(embeddings, list) and np.ndim(embeddings[0]) == 2:
        matrices = [as_rows(m).detach().cpu().numpy() for m in embeddings]
        if precision.endswith("int8") and ranges is None:
            ranges = calibration_ranges(np.concatenate(matrices) if calibration is None else calibration)
        return [_quantize(m, precision, ranges, calibration) for m in matrices]  # type: ignore[return-value]
    rows = float_tensor(embeddings).detach().cpu().numpy()
    codes = _quantize(rows, precision, ranges, calibration)
    return codes[0] if rows.ndim == 1 else codes


def information_retrieval(*args: Any, **kwargs: Any) -> list[list[dict[str, Any]]]:
    """The old name of `semantic_search` (same arguments and answer)."""
    return semantic_search(*args, **kwargs)


# The util function each similarity name computes, as a loss's config names it.
_SCORE_NAMES = {"cosine": "cos_sim", "dot": "dot_score", "euclidean": "euclidean_sim", "manhattan": "manhattan_sim"}


def similarity_fct_name(similarity_fct: Callable[..., Any]) -> str:
    """A loss's scoring callable in words, as a loss's config names it.

    `cos_sim`; a partial with its settings; a model's bound `similarity` as the function its
    similarity_fn_name picks; an object with `get_config_dict` with that config.
    """
    if isinstance(similarity_fct, functools.partial):
        settings = ", ".join(f"{k}={v!r}" for k, v in similarity_fct.keywords.items())
        name = similarity_fct_name(similarity_fct.func)
        return f"{name}({settings})" if settings else name
    name = getattr(similarity_fct, "__name__", type(similarity_fct).__name__)
    fn_name = getattr(getattr(similarity_fct, "__self__", None), "similarity_fn_name", None)
    if name in ("similarity", "similarity_pairwise") and fn_name is not None:
        picked = _SCORE_NAMES.get(str(fn_name), str(fn_name))
        return picked if name == "similarity" else f"pairwise_{picked}"
    config = getattr(similarity_fct, "get_config_dict", None)
    if callable(config):
        return f"{name}({', '.join(f'{k}={v!r}' for k, v in config().items())})"
    return str(name)


def truncate_embeddings(embeddings: Any, truncate_dim: int | None) -> Any:
    """The leading `truncate_dim` dimensions of each row (numpy or torch, as given); None keeps them all."""
    return embeddings if truncate_dim is None else embeddings[..., :truncate_dim]


def batch_to_device(batch: dict[str, Any], target_device: Any) -> dict[str, Any]:
    """The batch's tensors moved to `target_device` (other values kept)."""
    return {k: v.to(target_device) if isinstance(v, Tensor) else v for k, v in batch.items()}


def get_device_name() -> str:
    """The default device's name (sbert.device's policy): "cuda:LOCAL_RANK" under torchrun, "cuda:N", or "cpu"."""
    return str(default_device(local_rank=True))


def to_scipy_coo(x: Tensor) -> Any:
    """A torch sparse (or dense) matrix as a SciPy COO matrix."""
    import scipy.sparse

    coo = x.coalesce() if x.is_sparse else x.to_sparse().coalesce()
    rows, cols = coo.indices().cpu().numpy()
    return scipy.sparse.coo_matrix((coo.values().cpu().numpy(), (rows, cols)), shape=tuple(coo.shape))


def select_max_active_dims(embeddings: Any, max_active_dims: int | None) -> Any:
    """Each row with only its `max_active_dims` largest-magnitude values kept, the rest set to 0."""
    if max_active_dims is None:
        return embeddings
    rows = float_tensor(embeddings)
    k = min(max_active_dims, rows.shape[-1])
    kept = torch.zeros_like(rows).scatter(-1, rows.abs().topk(k, dim=-1).indices, 1.0)
    out = rows * kept
    return out.numpy() if isinstance(embeddings, np.ndarray) else out


__all__ = [
    "LoggingHandler",
    "SimilarityFunction",
    "all_gather",
    "all_gather_padded",
    "all_gather_with_grad",
    "append_to_last_row",
    "batch_to_device",
    "cat_padded_token_embeddings",
    "check_package_availability",
    "community_detection",
    "compute_count_vector",
    "cos_sim",
    "disable_datasets_caching",
    "disable_logging",
    "disabled_tqdm",
    "dot_score",
    "euclidean_sim",
    "float_tensor",
    "fullname",
    "get_device_name",
    "get_rank",
    "get_world_size",
    "import_from_string",
    "information_retrieval",
    "is_accelerate_available",
    "is_datasets_available",
    "is_dist_initialized",
    "is_training_available",
    "manhattan_sim",
    "maxsim",
    "maxsim_pairwise",
    "mean_maxsim",
    "mean_maxsim_pairwise",
    "mine_hard_negatives",
    "normalize_embeddings",
    "pairwise_angle_sim",
    "pairwise_cos_sim",
    "pairwise_dot_score",
    "pairwise_euclidean_sim",
    "pairwise_manhattan_sim",
    "paraphrase_mining",
    "paraphrase_mining_embeddings",
    "pytorch_cos_sim",
    "quantize_embeddings",
    "resolve_ids",
    "select_max_active_dims",
    "semantic_search",
    "similarity_fct_name",
    "stack_padded_token_embeddings",
    "to_scipy_coo",
    "truncate_embeddings",
]  # fmt: skip
