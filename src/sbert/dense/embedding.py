"""The dense kind's path from texts to vectors: token rows under the prompt plan, then the engine.

`encode` tokenizes and embeds in one call. A server counts each request's tokens as it arrives
(`token_rows`: its limits and usage need them) and embeds those same ids later in a merged group
(`encode_token_rows`), so no text is tokenized twice. Both ask the prompt plan (encoding/prompted.py)
for the prompt text and the leading tokens pooling skips, and the input module for truncation.

A mixin of SentenceEncoder (dense/model.py), kept apart so that file reads as the model; what it asks of
the model is typed as `EmbeddingHost`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import Protocol, cast

import numpy as np
import torch
from torch import nn

from sbert.dense.runtime import DenseHost
from sbert.encoding import long_text as long_text_policy
from sbert.encoding.engine import embed_rows, embed_streamed
from sbert.encoding.long_text import LongText, OnTruncation, report_truncation
from sbert.encoding.prompted import PromptPlan
from sbert.formats.model_config import EncoderSettings
from sbert.modules import Normalize, Transformer
from sbert.vectors.token_stream import STREAM_MIN_TEXTS
from sbert.weights_state import structure_cached

log = logging.getLogger(__name__)


class EmbeddingHost(DenseHost, Protocol):
    """What the mixin asks of the SentenceEncoder it is mixed into (typed here, so no import of dense/model.py)."""

    settings: EncoderSettings

    @property
    def max_seq_length(self) -> int: ...  # noqa: D102
    @property
    def transformer(self) -> Transformer: ...  # noqa: D102
    def routed(self, task: str | None = None) -> EmbeddingHost: ...  # noqa: D102
    def prompt_plan(  # noqa: D102
        self, *, task: str | None = None, prompt_name: str | None = None, prompt: str | None = None
    ) -> PromptPlan: ...
    def encode_token_rows(  # noqa: D102
        self, rows: Sequence[Sequence[int]], task: str | None = None, prompt_name: str | None = None,
        backend: str = "torch", precision: str = "auto",
    ) -> np.ndarray: ...  # fmt: skip


class DenseEmbedding:
    """Token rows and the vectors of token rows, for a SentenceEncoder."""

    def token_rows(
        self, texts: Sequence[str], task: str | None = None, prompt_name: str | None = None
    ) -> tuple[list[list[int]], list[int]]:
        """Token ids per text as encode(task=, prompt_name=) feeds them (prompt in front, truncated), and the cut.

        A Router model tokenizes with its route for `task`. `encode_token_rows` embeds these rows.
        """
        model = cast(EmbeddingHost, self)
        prompted = model.prompt_plan(task=task, prompt_name=prompt_name).apply(list(texts))
        return model.routed(task).input_module.token_ids(prompted)

    def token_lengths(
        self, texts: Sequence[str], task: str | None = None, prompt_name: str | None = None
    ) -> tuple[list[int], list[int]]:
        """Tokens per text as encode(task=, prompt_name=) feeds them, and the indices of the texts cut.

        The prompt and special tokens count, rows are truncated, and a Router model counts with its route for `task`.
        """
        rows, cut = self.token_rows(texts, task, prompt_name)
        return [len(row) for row in rows], cut

    def encode_token_rows(
        self, rows: Sequence[Sequence[int]], task: str | None = None, prompt_name: str | None = None,
        backend: str = "torch", precision: str = "auto",
    ) -> np.ndarray:  # fmt: skip
        """float32 (n, dim): the vectors of rows from `token_rows(texts, task, prompt_name)`.

        Equal to `encode(texts, task=, prompt_name=, backend=, precision=, on_truncation="ignore")`: the same
        batches, pooling (the prompt's tokens skipped as the plan says) and the model's truncate_dim.
        """
        model = cast(EmbeddingHost, self)
        if model.router is not None:
            return model.routed(task).encode_token_rows(rows, task, prompt_name, backend, precision)
        skip = model.prompt_plan(task=task, prompt_name=prompt_name).skip
        engine = model.backend(backend, precision)
        with self._inference_flags():
            out = embed_rows(engine, rows, model.chain_dimension, show_progress=False, skip=skip)
        width = model.settings.truncate_dim
        return np.ascontiguousarray(out[:, :width]) if width else out

    def _embed(
        self, texts: list[str], plan: PromptPlan, batch_size: int | None, batch_tokens: int | None,
        show_progress: bool | None, on_truncation: OnTruncation, long_text: LongText, backend: str, precision: str,
    ) -> torch.Tensor:  # fmt: skip
        """The chain's vectors (n, chain_dimension) for `texts` under the prompt plan, in input order.

        A large call whose rows are the inputs themselves (truncated, not split; truncation not an error)
        streams: tokenizer threads work ahead while the engine embeds the windows already tokenized.
        """
        model = cast(EmbeddingHost, self)
        engine = model.backend(backend, precision)
        if long_text == "truncate" and on_truncation != "error" and len(texts) >= STREAM_MIN_TEXTS:
            with self._inference_flags():
                buffer, cut = embed_streamed(engine, model.input_module.token_ids, plan.apply(texts),
                                             model.chain_dimension, batch_size, batch_tokens, show_progress,
                                             plan.skip)  # fmt: skip
            report_truncation(cut, len(texts), model.max_seq_length, on_truncation)
            return torch.from_numpy(buffer)
        ids, owners = self._token_rows(texts, plan, on_truncation, long_text)
        with self._inference_flags():
            buffer = embed_rows(engine, ids, model.chain_dimension, batch_size, batch_tokens, show_progress, plan.skip)
        normalized = any(isinstance(m, Normalize) for m in model.chain())
        return long_text_policy.merge(torch.from_numpy(buffer), owners, len(texts), renormalize=normalized)

    def _token_rows(
        self, texts: list[str], plan: PromptPlan, on_truncation: OnTruncation, long_text: LongText
    ) -> tuple[list[list[int]], list[int]]:
        """Token ids per row, prompt in front, and the input each row belongs to (long inputs may span rows)."""
        model = cast(EmbeddingHost, self)
        ids, cut = model.input_module.token_ids(plan.apply(texts))
        if long_text not in long_text_policy.LONG_TEXT_POLICIES:
            raise ValueError(f"long_text must be one of {long_text_policy.LONG_TEXT_POLICIES}, got {long_text!r}")
        if long_text == "truncate" or not cut:
            report_truncation(cut, len(texts), model.max_seq_length, on_truncation)
            return ids, list(range(len(ids)))
        rows, owners = long_text_policy.expand(model.transformer, texts, ids, cut, plan.text)
        log.info("%d of %d inputs exceeded %d tokens: split into windows", len(cut), len(texts), model.max_seq_length)
        return rows, owners

    @contextlib.contextmanager
    def _inference_flags(self) -> Iterator[None]:
        """Submodules in training mode switched to eval for the block, and back after it.

        Only those are switched: Module.train() sets every submodule's flag, a cost a server's many small
        calls need not pay when none is training.
        """
        model = cast(nn.Module, self)
        training = [m for m in structure_cached(model, "modules", lambda: tuple(model.modules())) if m.training]
        for module in training:
            module.training = False
        try:
            yield
        finally:
            for module in training:
                module.training = True
