"""Length-grouped shuffled batches: little padding, still a random order every epoch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Batches are formed inside windows of this many batches' worth of examples: wide enough for
# lengths to line up, narrow enough that a batch is still a random draw.
GROUP_BATCHES = 50


@dataclass(frozen=True)
class InOrder:
    """A streamed set in place of its lengths: `rows` rows that arrive already shuffled (data/streaming.py).

    Its batches are consecutive runs of `batch_size` stream positions: lengths are unknown until a
    row is read, so there is no length grouping, no token budget and no duplicate check.
    """

    rows: int

    def batches(self, batch_size: int) -> list[list[int]]:
        """Positions 0..rows-1 cut into batches, in order."""
        return [list(range(i, min(i + batch_size, self.rows))) for i in range(0, self.rows, batch_size)]


def length_grouped_batches(
    lengths: Sequence[int],
    batch_size: int,
    rng: np.random.Generator,
    group: int = GROUP_BATCHES,
    tokens: int = 0,
    texts: Sequence[frozenset[int]] | None = None,
) -> list[list[int]]:
    """Shuffle, sort by length inside windows of `group` batches, cut into batches, shuffle the batches.

    group=1 gives plain random batches. With `tokens`, a batch holds as many examples as fit that
    many padded tokens (examples x longest length), whatever `batch_size` says; `batch_size` then
    only sets the window width. With `texts` (each example's text ids), no text appears twice in
    a batch: for in-batch negatives, a duplicate would be a "negative" equal to the positive.
    """
    order = rng.permutation(len(lengths))
    window = batch_size * max(1, group)
    batches: list[list[int]] = []
    for start in range(0, len(order), window):
        chunk = order[start : start + window]
        chunk = chunk[np.argsort([-lengths[i] for i in chunk], kind="stable")].tolist()
        if texts is not None:
            batches += _distinct_cuts(chunk, lengths, batch_size, tokens, texts)
        else:
            batches += _token_cuts(chunk, lengths, tokens) if tokens else _count_cuts(chunk, batch_size)
    return [batches[i] for i in rng.permutation(len(batches))]


def _distinct_cuts(
    chunk: list[int], lengths: Sequence[int], batch_size: int, tokens: int, texts: Sequence[frozenset[int]]
) -> list[list[int]]:
    """Batches in `chunk`'s order (longest first) where no text repeats; a clashing example waits for the next."""

    def fits(batch: list[int]) -> bool:
        if not batch:
            return True
        return (len(batch) + 1) * lengths[batch[0]] <= tokens if tokens else len(batch) < batch_size

    batches: list[list[int]] = []
    pending = chunk
    while pending:  # every pass takes at least the first pending example
        batch: list[int] = []
        seen: set[int] = set()
        later: list[int] = []
        for i in pending:
            if fits(batch) and seen.isdisjoint(texts[i]):
                batch.append(i)
                seen |= texts[i]
            else:
                later.append(i)
        batches.append(batch)
        pending = later
    return batches


def _count_cuts(chunk: list[int], batch_size: int) -> list[list[int]]:
    return [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]


def _token_cuts(chunk: list[int], lengths: Sequence[int], tokens: int) -> list[list[int]]:
    # `chunk` is longest first, so a batch's padded width is the length of its first example.
    batches: list[list[int]] = []
    for i in chunk:
        if batches and (len(batches[-1]) + 1) * lengths[batches[-1][0]] <= tokens:
            batches[-1].append(i)
        else:
            batches.append([i])  # an example longer than the budget still trains, alone
    return batches


def epoch_plan(
    lengths: Sequence[Sequence[int] | InOrder],
    batch_size: int,
    seed: int,
    stage: int,
    epoch: int,
    group: int = GROUP_BATCHES,
    tokens: int = 0,
    texts: Sequence[Sequence[frozenset[int]] | None] | None = None,
    sampling: str = "round-robin",
) -> list[tuple[int, list[int]]]:
    """(objective index, example indices) for every step of one epoch; a batch never mixes objectives.

    Every objective's batches all run once per epoch. `round-robin` takes them in turns (a small
    set finishes early, the large ones go on alone); `proportional` shuffles the turns, so at any
    point of the epoch each set's share of steps follows its size. The plan depends only on
    (seed, stage, epoch), so a resumed run replays it exactly. `texts` gives, per objective, each
    example's text ids for batches without duplicates (None: any batch). A streamed set (`InOrder`)
    gives runs of positions in its stream's own seeded order.
    """
    rng = np.random.default_rng([seed, stage, epoch])
    keys = texts or [None] * len(lengths)
    queues = [
        lens.batches(batch_size) if isinstance(lens, InOrder)
        else length_grouped_batches(lens, batch_size, rng, group, tokens, k)
        for lens, k in zip(lengths, keys, strict=True)
    ]  # fmt: skip
    if sampling == "proportional":
        turns = rng.permutation(np.repeat(np.arange(len(queues)), [len(q) for q in queues]))
        taken = [0] * len(queues)
        ordered: list[tuple[int, list[int]]] = []
        for obj in turns.tolist():
            ordered.append((obj, queues[obj][taken[obj]]))
            taken[obj] += 1
        return ordered
    if sampling != "round-robin":
        raise ValueError(f"sampling={sampling!r}: use round-robin or proportional")
    plan: list[tuple[int, list[int]]] = []
    for step in range(max((len(q) for q in queues), default=0)):
        plan += [(obj, q[step]) for obj, q in enumerate(queues) if step < len(q)]
    return plan
