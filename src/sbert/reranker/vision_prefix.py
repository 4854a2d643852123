"""Vision rerankers: one query's pairs share their rendered prefix, run once; its KV cache serves each document.

As for text LLM rerankers (reranker/shared_prefix.py): a pair renders as [system turn, query, document, ending],
so the pairs of one text query begin with the same tokens, found on the token ids themselves. They run once;
each batch of documents (their tokens, image tokens included, and their pixels) then runs after a copy of
that cache, left-padded between prefix and suffix, and the score is read at the same last token. A prefix
holding image tokens (an image query) is not shared: its pixels would have to run with it.

A vision-language model places image features and positions its own way (Qwen2-VL's rotary positions are
three-dimensional, read from the whole row), so the path is checked once per model: the first group's
first two pairs are scored both ways, and a model whose scores differ by more than CHECK_TOLERANCE keeps
the whole rows, with one log line. The saving is the prefix's tokens for every document after the first:
large for short text documents, small beside a page image's thousand tokens.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

import torch
from torch import Tensor

from sbert.reranker.shared_prefix import MIN_PREFIX, cache_argument, repeated_cache, shared_prefix, suffix_inputs


class VisionPairScorer(Protocol):
    """What this module asks of reranker/vision_scorer.py's scorer (named here: that module calls this one)."""

    auto_model: Any
    tokenizer: Any
    prefix_checked: bool | None

    def pair_features(self, pairs: Sequence[tuple[Any, Any]], system: str | None = None) -> Any:
        """The model's inputs for a batch of pairs."""

    def whole_scores(self, pairs: Sequence[tuple[Any, Any]], system: str | None) -> tuple[Tensor, int]:
        """Scores of one batch of whole rendered pairs, and the tokens it took."""

    def score_logits(self, last: Tensor) -> Tensor:
        """The score from the last position's logits."""


log = logging.getLogger(__name__)
CHECK_TOLERANCE = 1e-4  # logits: float rounding of another attention shape, not a different computation
_TOKEN_KEYS = ("input_ids", "attention_mask", "token_type_ids", "mm_token_type_ids")  # per-token: never concatenated


def query_groups(pairs: Sequence[tuple[Any, Any]]) -> list[list[int]]:
    """Indices of the pairs of one text query, two pairs or more a group (an image query is not shared)."""
    by_query: dict[str, list[int]] = {}
    for i, (query, _) in enumerate(pairs):
        if isinstance(query, str):
            by_query.setdefault(query, []).append(i)
    return [group for group in by_query.values() if len(group) > 1]


@torch.inference_mode()
def prefix_group_scores(
    scorer: VisionPairScorer, pairs: Sequence[tuple[Any, Any]], system: str | None, batch_size: int
) -> tuple[Tensor, int] | None:  # fmt: skip
    """The scores of one query's pairs through the shared prefix and the tokens they took; None: not shared."""
    rendered = [scorer.pair_features([pair], system) for pair in pairs]  # each alone: no padding in its ids
    rows = [features["input_ids"][0].tolist() for features in rendered]
    p = shared_prefix(rows)
    image = getattr(scorer.auto_model.config, "image_token_id", None) or getattr(
        scorer.auto_model.config, "image_token_index", None)  # fmt: skip
    if p < MIN_PREFIX or image in rows[0][:p]:
        return None
    device = scorer.auto_model.device
    name = cache_argument(scorer.auto_model)
    head = torch.tensor([rows[0][:p]], dtype=torch.long, device=device)
    cache = getattr(scorer.auto_model(input_ids=head, use_cache=True, return_dict=True), name)
    scores = [_suffix_scores(scorer, (name, cache), p, rendered[start : start + batch_size])
              for start in range(0, len(pairs), batch_size)]  # fmt: skip
    return torch.cat(scores), p + sum(len(r) - p for r in rows)


def _suffix_scores(scorer: VisionPairScorer, cache: tuple[str, object], p: int, rendered: list[Any]) -> Tensor:
    """One batch of documents after a copy of the prefix's cache: their tokens left-padded, their pixels batched."""
    device = scorer.auto_model.device
    suffixes = [features["input_ids"][0, p:].tolist() for features in rendered]
    inputs = {k: v.to(device) for k, v in suffix_inputs(suffixes, p, scorer.tokenizer).items()}
    keys = dict.fromkeys(k for f in rendered for k, v in f.items() if k not in _TOKEN_KEYS and isinstance(v, Tensor))
    media = {key: torch.cat([f[key] for f in rendered if key in f]).to(device) for key in keys}  # text rows have none
    if "pixel_values" in media:
        media["pixel_values"] = media["pixel_values"].to(scorer.auto_model.dtype)
    logits = scorer.auto_model(**inputs, use_cache=True, logits_to_keep=1, return_dict=True, **media,
                               **repeated_cache(cache, len(suffixes))).logits[:, -1]  # fmt: skip
    return scorer.score_logits(logits).float().cpu()


def prefix_path_holds(scorer: VisionPairScorer, pairs: Sequence[tuple[Any, Any]], system: str | None) -> bool:
    """Whether this model scores two pairs the same through the shared prefix as through whole rows (once)."""
    if scorer.prefix_checked is None:
        shared = prefix_group_scores(scorer, pairs[:2], system, 2)
        if shared is None:
            return False  # too short a prefix to tell: whole rows, and ask again with the next group
        whole = torch.cat([scorer.whole_scores([pair], system)[0] for pair in pairs[:2]])  # each alone: no padding
        gap = float((shared[0] - whole).abs().max())
        scorer.prefix_checked = gap <= CHECK_TOLERANCE
        if not scorer.prefix_checked:
            log.info("%s: the shared-prefix path scores %.2g away from whole rows; whole rows it is",
                     type(scorer.auto_model).__name__, gap)  # fmt: skip
    return scorer.prefix_checked
