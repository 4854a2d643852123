"""Training batches from a streamed table: its rows read, tokenized and labelled one batch at a time.

A streamed set's plan entries (training/epoch_plan.py) are runs of positions in the epoch's stream
order. The feed keeps the stream open where the last batch ended; a batch that starts anywhere
else (the first one after a resume) reopens the epoch's stream and skips to its first position.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import torch
from torch import Tensor

from sbert.data.streaming import Row, TableStream
from sbert.encoding.prompted import PromptPlan

TokenIds = Callable[[Sequence[str]], tuple[list[list[int]], list[int]]]  # texts -> (token ids, truncated rows)


class StreamFeed:
    """Reads one streamed objective's batches in plan order; used by one thread (the batch prefetcher)."""

    def __init__(
        self, stream: TableStream, token_ids: Callable[[int], TokenIds], plans: list[PromptPlan], seed: int, stage: int
    ) -> None:
        self.stream, self.token_ids, self.plans = stream, token_ids, plans  # token_ids(column) -> that column's
        self.seed, self.stage = seed, stage
        self.truncated = 0  # rows cut at max_seq_length so far (known only as batches are made)
        self._rows: Iterator[Row] | None = None
        self._at: tuple[int, int] = (-1, -1)  # (epoch, position) the open stream yields next

    def take(self, epoch: int, positions: Sequence[int]) -> tuple[list[list[list[int]]], Tensor | None]:
        """Token ids per column ([column][row]) and labels of the rows at `positions` (consecutive)."""
        first = positions[0]
        if self._rows is None or self._at != (epoch, first):
            self._rows = self.stream.rows(self.seed, self.stage, epoch, start=first)
        rows = [row for _, row in zip(positions, self._rows, strict=False)]
        if len(rows) != len(positions):
            raise RuntimeError(f"{self.stream.where}: the stream ended at row {first + len(rows)} of epoch {epoch}, "
                               f"before position {positions[-1]}; was the table changed while training?")  # fmt: skip
        self._at = (epoch, first + len(rows))
        columns = []
        for c, plan in enumerate(self.plans):
            ids, cut = self.token_ids(c)(plan.apply([texts[c] for texts, _ in rows]))
            columns.append(ids)
            self.truncated += len(cut)
        labels = [label for _, label in rows]
        if any(label is None for label in labels):
            return columns, None
        return columns, torch.tensor(labels, dtype=torch.float32)
