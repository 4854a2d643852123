"""Length-grouped shuffled batches: little padding, still a random order every epoch."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Batches are formed inside windows of this many batches' worth of examples: wide enough for
# lengths to line up, narrow enough that a batch is still a random draw.
GROUP_BATCHES = 50


def length_grouped_batches(
    lengths: Sequence[int], batch_size: int, rng: np.random.Generator, group: int = GROUP_BATCHES, tokens: int = 0
) -> list[list[int]]:
    """Shuffle, sort by length inside windows of `group` batches, cut into batches, shuffle the batches.

    group=1 gives plain random batches. With `tokens`, a batch holds as many examples as fit that
    many padded tokens (examples x longest length), whatever `batch_size` says; `batch_size` then
    only sets the window width.
    """
    order = rng.permutation(len(lengths))
    window = batch_size * max(1, group)
    batches: list[list[int]] = []
    for start in range(0, len(order), window):
        chunk = order[start : start + window]
        chunk = chunk[np.argsort([-lengths[i] for i in chunk], kind="stable")].tolist()
        batches += _token_cuts(chunk, lengths, tokens) if tokens else _count_cuts(chunk, batch_size)
    return [batches[i] for i in rng.permutation(len(batches))]


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
    lengths: Sequence[Sequence[int]],
    batch_size: int,
    seed: int,
    stage: int,
    epoch: int,
    group: int = GROUP_BATCHES,
    tokens: int = 0,
) -> list[tuple[int, list[int]]]:
    """(objective index, example indices) for every step of one epoch, objectives round-robin.

    The plan depends only on (seed, stage, epoch), so a resumed run replays it exactly.
    """
    rng = np.random.default_rng([seed, stage, epoch])
    queues = [length_grouped_batches(lens, batch_size, rng, group, tokens) for lens in lengths]
    plan: list[tuple[int, list[int]]] = []
    for step in range(max((len(q) for q in queues), default=0)):
        plan += [(obj, q[step]) for obj, q in enumerate(queues) if step < len(q)]
    return plan
