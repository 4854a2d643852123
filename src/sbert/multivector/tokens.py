"""Texts to the token rows a multi-vector model scores: lengths, prefix insertion, query expansion, skiplist.

The rules, per layout (multivector/layout.py says which one a folder uses):
- length: queries are cut at `query_length` (at the expansion length when it is "fixed"), documents
  at `document_length`; either falls back to the Transformer's max_seq_length, which also cuts a
  call with no task (as sentence-transformers 6 does: no task, no task length, no prefix token).
- prefix: sentence-transformers puts the prompt in front of the text; PyLate cuts the text one
  token short and inserts the prefix token after the first token ([CLS] [Q] ...).
- expansion: a query is padded to the expansion length with [MASK] (else EOS); those positions
  are scored, and seen by attention only with `attend`.
- skiplist: document tokens whose ids are in the skiplist are not scored. sentence-transformers
  drops skiplist words that are not one vocabulary token; PyLate keeps their id, [UNK].
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from sbert.errors import ModelFormatError, SbertError
from sbert.modules import Features, Transformer
from sbert.multivector.layout import MultiVectorSettings
from sbert.similarity import unit_rows

log = logging.getLogger(__name__)
SCORED = "scored_mask"  # features key: (B, T) bool, the positions whose vectors come out


@dataclass(frozen=True)
class TokenRules:
    """The settings resolved against one tokenizer: ids instead of words."""

    settings: MultiVectorSettings
    expansion_id: int | None
    prefix_ids: dict[str, int | None]  # by task: "query", "document"
    skip_ids: torch.Tensor | None
    pad_id: int | None = None  # the tokenizer's padding id: what `pad` writes before expansion fills it

    @classmethod
    def resolve(cls, settings: MultiVectorSettings, transformer: Transformer) -> TokenRules:
        """Look the words of `settings` up in the transformer's tokenizer."""
        tok = transformer.tokenizer
        expansion_id = None
        if settings.expansion is not None:
            token = settings.expansion.token
            expansion_id = tok.convert_tokens_to_ids(token) if token else tok.mask_token_id
            if expansion_id is None:
                expansion_id = tok.eos_token_id
            if expansion_id is None:
                raise ModelFormatError("query expansion needs a [MASK] or EOS token; this tokenizer has neither")
        prefix_ids = {task: _prefix_id(settings.prefix_for(task), tok) for task in ("query", "document")}
        return cls(settings, expansion_id, prefix_ids, _skip_ids(settings, tok), tok.pad_token_id)

    def limit(self, task: str | None, transformer: Transformer) -> int:
        """Tokens kept per text for `task`, special tokens and prefix included."""
        exp = self.settings.expansion if task == "query" else None
        cap = self.settings.length_for(task) if task is not None else None
        if exp is not None and exp.strategy == "fixed":
            return exp.length
        if exp is not None:  # "min": the expansion length is a floor, the query length still the cap
            return max(cap or transformer.max_seq_length, exp.length)
        return cap or transformer.max_seq_length

    def token_ids(
        self, transformer: Transformer, texts: Sequence[str], task: str | None, prompt: str = ""
    ) -> tuple[list[list[int]], list[int]]:
        """Token rows of `texts` for `task`, with the prompt before the text and the prefix token inserted."""
        limit = self.limit(task, transformer)
        prefix = self.prefix_ids.get(task) if task is not None else None
        texts = [prompt + t for t in texts] if prompt else list(texts)
        if prefix is None:
            return transformer.token_ids(texts, limit)
        ids, cut = transformer.token_ids(texts, limit - 1)
        return [[*row[:1], prefix, *row[1:]] for row in ids], cut

    def pad(self, transformer: Transformer, rows: Sequence[Sequence[int]], task: str | None) -> Features:
        """Padded features plus `SCORED`, the positions whose token vectors are the output."""
        exp = self.settings.expansion if task == "query" else None
        features = transformer.pad(rows)
        ids, mask = features["input_ids"], features["attention_mask"]
        scored = mask.bool()
        if exp is not None:
            if ids.shape[1] < exp.length:  # widen to the floor; the filler becomes expansion positions
                extra = exp.length - ids.shape[1]
                features = {k: torch.nn.functional.pad(v, (0, extra)) for k, v in features.items()}
                ids, mask = features["input_ids"], features["attention_mask"]
            expand = (mask == 0) & (torch.arange(ids.shape[1]) < exp.length)
            assert self.expansion_id is not None
            features["input_ids"] = ids.masked_fill(expand, self.expansion_id)
            if exp.attend:
                features["attention_mask"] = mask.masked_fill(expand, 1)
            scored = mask.bool() | expand
        features[SCORED] = self.keep_scored(ids, scored, task)
        return features

    def keep_scored(self, ids: torch.Tensor, scored: torch.Tensor, task: str | None) -> torch.Tensor:
        """`scored` (any shape, like `ids`) without the skiplist's tokens and, for documents, the tokens not kept."""
        if (task or "document") in self.settings.skiplist_tasks and self.skip_ids is not None:
            scored = scored & ~torch.isin(ids, self.skip_ids.to(ids.device))
        keep = self.settings.keep_only_token_ids
        if task != "query" and keep:
            scored = scored & torch.isin(ids, torch.tensor(keep, dtype=ids.dtype, device=ids.device))
        return scored

    def packable(self, transformer: Transformer, task: str | None) -> bool:
        """Whether `task`'s rows can run padding-free: every token of a packed row is attended.

        Queries whose expansion tokens are scored but not attended (`attend` false, the default of
        sentence-transformers and PyLate) cannot, nor expansion on a left-padding tokenizer (where
        `pad` puts the expansion positions before the text).
        """
        exp = self.settings.expansion if task == "query" else None
        return exp is None or (exp.attend and transformer.tokenizer.padding_side != "left")

    def packed_row(self, row: Sequence[int], task: str | None) -> tuple[list[int], list[int]]:
        """(the ids a packed batch runs, the ids the skiplist sees) for one row of a `packable` task.

        Expansion positions run as the expansion token and are filtered as `pad` filters them: as padding.
        """
        exp = self.settings.expansion if task == "query" else None
        extra = max(exp.length - len(row), 0) if exp is not None else 0
        if not extra:
            return list(row), list(row)
        assert self.expansion_id is not None and self.pad_id is not None
        return [*row, *[self.expansion_id] * extra], [*row, *[self.pad_id] * extra]


def _prefix_id(prefix: str, tokenizer: object) -> int | None:
    if not prefix:
        return None
    found = tokenizer.convert_tokens_to_ids(prefix)  # type: ignore[attr-defined]
    if found is None:
        raise ModelFormatError(f"prefix {prefix!r} is not a token of this tokenizer")
    return int(found)


def _skip_ids(settings: MultiVectorSettings, tokenizer: object) -> torch.Tensor | None:
    """The skiplist as token ids, by the layout's rule for words that are not one vocabulary token."""
    unk_id = getattr(tokenizer, "unk_token_id", None)
    unk = getattr(tokenizer, "unk_token", None)
    ids, dropped = [], []
    for word in settings.skiplist_words:
        token_id = tokenizer.convert_tokens_to_ids(word)  # type: ignore[attr-defined]
        if settings.flavor == "st" and unk_id is not None and token_id == unk_id and word != unk:
            dropped.append(word)  # sentence-transformers: else every real [UNK] would go unscored
        elif token_id is not None:
            ids.append(int(token_id))
    if dropped:
        log.info("skiplist words that are not single tokens of this tokenizer, left out: %s", dropped)
    return torch.tensor(sorted(set(ids)), dtype=torch.long) if ids else None


def refuse_token_pooling(token_pooling: object, owner: str) -> None:
    """One line for a token pooling asked of sbert (6.2's and 6.3's `token_pooling`): every token is kept."""
    if token_pooling is not None:
        raise SbertError(f"{owner}: token_pooling is not supported by sbert (its multi-vector encode and index keep "
                         "every token); leave it None")  # fmt: skip


def served_width(width: int, truncate_dim: int | None) -> int:
    """The token width served from a head of `width`: `truncate_dim` where it cuts (checked), else the whole."""
    if truncate_dim is None:
        return width
    if isinstance(truncate_dim, bool) or not isinstance(truncate_dim, int) or truncate_dim < 1:
        raise ValueError(f"truncate_dim must be a positive integer, got {truncate_dim!r}")
    return min(truncate_dim, width)


def cut_tokens(mats: Sequence[np.ndarray], width: int) -> list[np.ndarray]:
    """Each (tokens, dim) matrix cut to its first `width` dimensions, every token vector unit length again."""
    return [unit_rows(m[:, :width]) for m in mats]
