"""Learning-rate schedules: linear warm-up, then linear decay to zero (the SBERT paper's), or constant or cosine.

The curves are transformers' (get_linear_schedule_with_warmup, get_constant_schedule[_with_warmup],
get_cosine_schedule_with_warmup): the names `lr_scheduler_type` takes, so a drop-in script's choice runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable


def warmup_steps(total_steps: int, warmup: float) -> int:
    """Number of warm-up steps for a share `warmup` of `total_steps`."""
    return math.ceil(total_steps * warmup)


def warmup_linear(total_steps: int, warmup: int) -> Callable[[int], float]:
    """The multiplier of the base learning rate at each step."""

    # The same curve as transformers' get_linear_schedule_with_warmup (used by the paper's code):
    # the first step runs at lr 0, the peak comes at step `warmup`.
    def factor(step: int) -> float:
        if step < warmup:
            return step / max(1, warmup)
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    return factor


SCHEDULES = ("linear", "constant", "constant_with_warmup", "cosine")


def lr_factor(name: str, total_steps: int, warmup: int) -> Callable[[int], float]:
    """The multiplier of the base learning rate at each step under the schedule `name` (one of SCHEDULES)."""
    if name not in SCHEDULES:
        raise ValueError(f"unknown learning-rate schedule {name!r}; known: {', '.join(SCHEDULES)}")
    if name == "linear":
        return warmup_linear(total_steps, warmup)
    if name == "constant":
        return lambda step: 1.0

    def factor(step: int) -> float:
        if step < warmup:
            return step / max(1, warmup)
        if name == "constant_with_warmup":
            return 1.0
        progress = (step - warmup) / max(1, total_steps - warmup)
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))

    return factor
