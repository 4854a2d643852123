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

from collections.abc import Callable, Hashable
from typing import Any, Self, TypeVar, cast

import torch
from torch.nn.modules.module import (
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.weak import WeakIdKeyDictionary

# Optimizer steps per parameter; weak, so a freed parameter leaves no entry behind.
_STEPS: WeakIdKeyDictionary = WeakIdKeyDictionary()

WeightsKey = tuple[int, tuple[tuple[int, int, int], ...]]
E = TypeVar("E")


def _count_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    # A step that found a non-finite gradient (found_inf) may leave the weights as they were:
    # counting it anyway only costs a rebuilt cache, never a stale one.
    for group in optimizer.param_groups:
        for param in group["params"]:
            _STEPS[param] = _STEPS.get(param, 0) + 1


register_optimizer_step_post_hook(_count_step)

# Advanced whenever any module anywhere registers a parameter or a submodule (`setattr` included: a LoRA wrap,
# an int8 swap, a replaced Parameter), so a model's parameter list can be kept between encodes: walking
# MiniLM's modules for its 100 parameters on every call made `backend()` cost 0.85 ms instead of 0.29.
_STRUCTURE = [0]


def _structure_moved(*_: object) -> None:
    _STRUCTURE[0] += 1


register_module_parameter_registration_hook(_structure_moved)
register_module_module_registration_hook(_structure_moved)


def structure_cached(module: torch.nn.Module, slot: str, compute: Callable[[], E]) -> E:
    """`compute()` for `module`, kept until some module registers a parameter or a submodule.

    A TracksWeights model also drops what it keeps on `to()` / casts (a conversion may swap Parameters unseen).
    """
    kept: dict[str, tuple[int, Any]] = module.__dict__.setdefault("_by_structure", {})
    found = kept.get(slot)
    if found is None or found[0] != _STRUCTURE[0]:
        found = kept[slot] = (_STRUCTURE[0], compute())
    return cast(E, found[1])


def weights_key(module: torch.nn.Module, generation: int) -> WeightsKey:
    """A key equal for two looks at `module` only if no known writer touched its weights in between."""
    params = structure_cached(module, "parameters", lambda: tuple(module.parameters()))
    if not _STEPS:  # no optimizer has stepped a live parameter: skip a weak-reference lookup per parameter
        return generation, tuple((p._version, 0, p.data_ptr()) for p in params)
    return generation, tuple((p._version, _STEPS.get(p, 0), p.data_ptr()) for p in params)


def placement(module: torch.nn.Module) -> tuple[tuple[int, torch.dtype, torch.device], ...]:
    """Storage address, dtype and device of every parameter: what a `to()` or a cast may change."""
    return tuple((p.data_ptr(), p.dtype, p.device) for p in module.parameters())


class TracksWeights:
    """What every model kind shares about its weights: their state key, and engines cached per state.

    Mixed in before `nn.Module` (it overrides `_apply`). Engines (a cast copy, an exported graph,
    a packed engine) are built from the weights, so each is kept with the state it was built for
    and rebuilt when the weights move on.
    """

    _generation: int = 0  # advanced by writers torch does not track (the module docstring says which)

    def weights_key(self) -> WeightsKey:
        """A cheap key that changes whenever the weights may have changed."""
        return weights_key(cast(torch.nn.Module, self), self._generation)

    def mark_weights_changed(self) -> None:
        """Say that the weights changed in a way torch does not track (a LoRA wrap, writes through `.data`).

        Optimizer steps (fused included), `load_state_dict`, `to()` and casts are noticed without it.
        """
        self._generation += 1

    def cached_engine(self, slot: Hashable, build: Callable[[], E]) -> E:
        """The engine in `slot` for the current weights: built by `build` now if the weights changed since."""
        engines: dict[Hashable, tuple[WeightsKey, Any]] = self.__dict__.setdefault("_engines_by_state", {})
        state, cached = self.weights_key(), engines.get(slot)
        if cached is None or cached[0] != state:
            engines[slot] = (state, build())
        return cast(E, engines[slot][1])

    def drop_engines(self, which: Callable[[Hashable], bool]) -> None:
        """Forget the cached engines whose slot `which` accepts (they are rebuilt on next use)."""
        engines = self.__dict__.get("_engines_by_state", {})
        for slot in [s for s in engines if which(s)]:
            del engines[slot]

    def __getstate__(self) -> dict[str, Any]:
        # A pickled or deep-copied model (a worker's copy) rebuilds its engines from its own weights:
        # a graph session does not pickle, and a cast copy would only double what travels.
        state = cast(dict[str, Any], super().__getstate__())
        return {k: v for k, v in state.items() if k not in ("_engines_by_state", "_by_structure")}

    def _apply(self, fn: Callable[..., object], recurse: bool = True) -> Self:
        # to(), cuda(), half(), float(), ...: a cast may round the weights and a move may land
        # them at a reused address, so a real change of placement starts a new generation.
        module = cast(torch.nn.Module, self)
        before = placement(module)
        module.__dict__.pop("_by_structure", None)  # a conversion may swap Parameters without registering them
        super()._apply(fn, recurse)  # type: ignore[misc]
        if placement(module) != before:
            self.mark_weights_changed()
        return self
