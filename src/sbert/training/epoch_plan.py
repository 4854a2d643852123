"""Length-grouped shuffled batches: little padding, still a random order every epoch."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Batches are formed inside windows of this many batches' worth of examples: wide enough for
# lengths to line up, narrow enough that a batch is still a random draw.
GROUP_BATCHES = 50


def length_grouped_batches(
    lengths: Sequence[int], batch_size: int, rng: np.random.Generator, group: int = GROUP_BATCHES
) -> list[list[int]]:
    """Shuffle, sort by length inside windows of `group` batches, cut into batches, shuffle the batches.

    group=1 gives plain random batches.
    """
    order = rng.permutation(len(lengths))
    window = batch_size * max(1, group)
    batches: list[list[int]] = []
    for start in range(0, len(order), window):
        chunk = order[start : start + window]
        chunk = chunk[np.argsort([-lengths[i] for i in chunk], kind="stable")]
        batches += [chunk[i : i + batch_size].tolist() for i in range(0, len(chunk), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def epoch_plan(
    lengths: Sequence[Sequence[int]], batch_size: int, seed: int, stage: int, epoch: int, group: int = GROUP_BATCHES
) -> list[tuple[int, list[int]]]:
    """(objective index, example indices) for every step of one epoch, objectives round-robin.

    The plan depends only on (seed, stage, epoch), so a resumed run replays it exactly.
    """
    rng = np.random.default_rng([seed, stage, epoch])
    queues = [length_grouped_batches(lens, batch_size, rng, group) for lens in lengths]
    plan: list[tuple[int, list[int]]] = []
    for step in range(max((len(q) for q in queues), default=0)):
        plan += [(obj, q[step]) for obj, q in enumerate(queues) if step < len(q)]
    return plan
