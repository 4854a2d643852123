"""Which state a model's weights are in: a cheap key that moves whenever a writer may have changed them.

Caches built from the weights (the CUDA engine's cast copy, the weights digest behind the ONNX,
shard and index caches, "unchanged since load") compare this key. Parameter `_version`
counters alone are not enough: fused AdamW (what CUDA training runs) updates parameters in
place without advancing them, and neither do writes through `.data`. So the key joins:
- each parameter's `_version` (ordinary in-place ops, `load_state_dict`'s copies);
- how many optimizer steps touched that parameter, counted by a process-wide optimizer hook
  (any optimizer: fused, foreach or plain, sbert's trainer or the user's own loop);
- each parameter's storage address (a `.data = tensor` swap);
- the model's own generation, which `to()` / casts, `load_state_dict` and
  `mark_weights_changed()` (for writes through `.data`) advance.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.weak import WeakIdKeyDictionary

# Optimizer steps per parameter; weak, so a freed parameter leaves no entry behind.
_STEPS: WeakIdKeyDictionary = WeakIdKeyDictionary()

WeightsKey = tuple[int, tuple[tuple[int, int, int], ...]]


def _count_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    # A step that found a non-finite gradient (found_inf) may leave the weights as they were:
    # counting it anyway only costs a rebuilt cache, never a stale one.
    for group in optimizer.param_groups:
        for param in group["params"]:
            _STEPS[param] = _STEPS.get(param, 0) + 1


register_optimizer_step_post_hook(_count_step)


def weights_key(module: torch.nn.Module, generation: int) -> WeightsKey:
    """A key equal for two looks at `module` only if no known writer touched its weights in between."""
    return generation, tuple((p._version, _STEPS.get(p, 0), p.data_ptr()) for p in module.parameters())


def placement(module: torch.nn.Module) -> tuple[tuple[int, torch.dtype, torch.device], ...]:
    """Storage address, dtype and device of every parameter: what a `to()` or a cast may change."""
    return tuple((p.data_ptr(), p.dtype, p.device) for p in module.parameters())
