"""LLM rerankers: the prompt prefix a query's pairs share runs once, and its KV cache serves every document.

A rendered pair is [system turn, query, document, template ending]; all pairs of one query (what `rank`,
/v1/rerank and an index's rerank step send) begin with the same tokens up to the document. Those tokens
are found on the token ids themselves (the longest common prefix of the group's rows, so nothing about
the template is assumed), run once as a batch of one, and their keys and values are repeated over each
batch of suffixes, which then run alone:

    [prefix | pads | suffix_i]   attention mask 0 on the pads, positions p, p + 1, ... on suffix_i

so each suffix token sees what it sees in the full row ([pads | prefix | suffix_i], left-padded), and the
score is read at the same last token. The saving is the prefix's tokens times the group's size: on
Qwen3-Reranker's template (an instruction system turn and the query before each document) a large part of
a short document's row. Torch on the CPU in the weights' own dtype (the other engines run whole rows).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from sbert.vectors.batching import token_batches

if TYPE_CHECKING:
    from sbert.modules.logit_score import LogitPairScorer

MIN_PREFIX = 8  # tokens a group must share for the cached run to be worth its cache copies
BATCH_TOKENS = 4096  # suffix tokens a batch holds (padded), with up to MAX_ROWS rows
MAX_ROWS = 64
# Each row of a batch holds its own copy of the prefix's keys and values (transformers' caches are per row):
# rows are capped so that the copies stay within this many bytes (Qwen3-0.6B, a 100-token prefix: 22 MB a row).
CACHE_BYTES = 256 * 2**20


def shared_prefix(rows: Sequence[Sequence[int]]) -> int:
    """Tokens every row begins with, leaving each row at least its last token (where the score is read)."""
    if not rows:
        return 0
    limit = min(len(r) for r in rows) - 1
    first = rows[0]
    count = 0
    while count < limit and all(r[count] == first[count] for r in rows):
        count += 1
    return count


def groups_worth_sharing(keys: Sequence[object], rows: Sequence[Sequence[int]]) -> list[list[int]]:
    """Indices of rows with one key (one query) that share at least MIN_PREFIX tokens, two rows or more a group."""
    by_key: dict[object, list[int]] = {}
    for i, key in enumerate(keys):
        by_key.setdefault(key, []).append(i)
    return [g for g in by_key.values() if len(g) > 1 and shared_prefix([rows[i] for i in g]) >= MIN_PREFIX]


@torch.inference_mode()
def prefix_scores(scorer: LogitPairScorer, rows: Sequence[Sequence[int]]) -> np.ndarray:
    """The LogitScore of each row (float32, (n,)), the rows' shared prefix run once and its cache reused.

    Equal rows (a document sent twice, or documents cut to the same tokens) run once, so they tie exactly.
    """
    unique: dict[tuple[int, ...], int] = {}
    slot = [unique.setdefault(tuple(r), len(unique)) for r in rows]
    if len(unique) < len(rows):
        return _distinct_scores(scorer, [list(r) for r in unique])[slot]
    return _distinct_scores(scorer, rows)


def _distinct_scores(scorer: LogitPairScorer, rows: Sequence[Sequence[int]]) -> np.ndarray:
    """`prefix_scores` of rows that are all different."""
    p = shared_prefix(rows)
    device = scorer.auto_model.device
    head = torch.tensor([list(rows[0][:p])], dtype=torch.long, device=device)
    name = cache_argument(scorer.auto_model)
    cache = getattr(scorer.auto_model(input_ids=head, use_cache=True, return_dict=True), name)
    suffixes = [list(r[p:]) for r in rows]
    lengths = [len(s) for s in suffixes]
    order = sorted(range(len(rows)), key=lambda i: -lengths[i])
    out = np.zeros(len(rows), dtype=np.float32)
    max_rows = max(1, min(MAX_ROWS, CACHE_BYTES // max(cache_bytes(cache), 1)))
    for batch in token_batches(order, lengths, BATCH_TOKENS, max_rows):
        out[batch] = _suffix_batch(scorer, (name, cache), p, [suffixes[i] for i in batch])
    return out


def cache_bytes(cache: object) -> int:
    """Bytes of a KV cache's tensors (its `layers`' keys and values; older caches' key / value lists)."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        tensors = [t for layer in layers for t in (getattr(layer, "keys", None), getattr(layer, "values", None))]
    else:
        tensors = [*getattr(cache, "key_cache", []), *getattr(cache, "value_cache", [])]
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def cache_argument(model: torch.nn.Module) -> str:
    """The name of a model's KV cache, in and out: `cache` from transformers 5.2x, `past_key_values` before."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _suffix_batch(scorer: LogitPairScorer, cache: tuple[str, object], p: int, suffixes: list[list[int]]
                  ) -> np.ndarray:  # fmt: skip
    """One batch of suffixes after a copy of the prefix's cache, left-padded between prefix and suffix."""
    device = scorer.auto_model.device
    inputs = {k: v.to(device) for k, v in suffix_inputs(suffixes, p, scorer.tokenizer).items()}
    logits = scorer.auto_model(**inputs, use_cache=True, logits_to_keep=1, return_dict=True,
                               **repeated_cache(cache, len(suffixes))).logits[:, -1]  # fmt: skip
    return scorer.score_logits(logits).cpu().numpy()


def suffix_inputs(suffixes: Sequence[Sequence[int]], p: int, tokenizer: Any) -> dict[str, torch.Tensor]:
    """The suffixes' ids, left-padded to one width, with the attention mask over prefix and suffix and positions.

    Each row is [prefix | pads | suffix_i]: mask 0 on the pads, positions p, p + 1, ... on the suffix.
    """
    width = max(len(s) for s in suffixes)
    pad = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)
    ids = torch.full((len(suffixes), width), pad, dtype=torch.long)
    mask = torch.zeros((len(suffixes), p + width), dtype=torch.long)
    mask[:, :p] = 1
    for i, s in enumerate(suffixes):
        ids[i, width - len(s) :] = torch.as_tensor(s, dtype=torch.long)
        mask[i, p + width - len(s) :] = 1
    positions = (p + mask[:, p:].cumsum(1) - 1).clamp(min=p)  # pads take any position: nothing attends to them
    return {"input_ids": ids, "attention_mask": mask, "position_ids": positions}


def repeated_cache(cache: tuple[str, object], rows: int) -> dict[str, object]:
    """A copy of the prefix's KV cache repeated over `rows` rows, as the forward's keyword argument."""
    name, copied = cache[0], copy.deepcopy(cache[1])
    copied.batch_repeat_interleave(rows)  # type: ignore[attr-defined]
    return {name: copied}
