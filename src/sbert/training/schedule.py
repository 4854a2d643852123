"""Learning-rate schedule: linear warm-up, then linear decay to zero (as in the SBERT paper)."""

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
