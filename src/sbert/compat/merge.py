"""`Model.merge([...])`: one model from fine-tunes of a common ancestor, by averaging their weights.

sentence-transformers 6.2 hands merging to mergekit; sbert computes the three methods people use most
itself, on every floating-point tensor of the models (heads included), as mergekit defines them:

    linear            Σ w_i θ_i / Σ w_i (weights 1 by default; `normalize: False` keeps them absolute)
    task_arithmetic   θ_base + Σ w_i (θ_i - θ_base) over the inputs other than the base (`normalize` off by default)
    slerp             spherical interpolation of two models at `t` (0.5 by default; the first is the base)

The models must match: the same tensors (names, shapes), tokenizer vocabulary and non-float tensors.
The result is a new model of the first one's class and settings; the inputs are left unchanged.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from typing import Any

import torch

from sbert.errors import SbertError

METHODS = ("linear", "task_arithmetic", "slerp")
COLLINEAR = 0.9995  # |cos| beyond which slerp falls back to linear interpolation (mergekit's threshold)


def merge_models(cls: Any, models: Sequence[Any], method: str, base_model: Any, parameters: dict[str, Any],
                 dtype: Any, out_dtype: Any, device: Any, load_kwargs: dict[str, Any]) -> Any:  # fmt: skip
    """The merged model (a new `cls` instance on `device`)."""
    if method not in METHODS:
        raise SbertError(f"merge method {method!r}: sbert merges with {', '.join(METHODS)} (mergekit's other "
                         "methods are not built in)")  # fmt: skip
    cache: dict[str, Any] = {}  # a base named by the same path as an input is that input
    loaded = [_load(cls, m, device, load_kwargs, cache) for m in models]
    base = None if base_model is None else _load(cls, base_model, device, load_kwargs, cache)
    if method == "slerp":
        if len(loaded) != 2:
            raise SbertError(f"merge method 'slerp' takes two models, got {len(loaded)}")
        base = base if base is not None else loaded[0]
    if method == "task_arithmetic" and base is None:
        raise SbertError("merge method 'task_arithmetic' needs base_model (the model the others were tuned from)")
    tuned = [m for m in loaded if m is not base] if method != "linear" else loaded
    if len(tuned) + (base is not None and method != "linear") < 2:
        raise SbertError(f"merge needs two or more models, got {len(loaded)}")
    involved = loaded + ([base] if base is not None and base not in loaded else [])
    state_of = {id(m): m.state_dict() for m in involved}  # detached views, read once per model
    _check_compatible(involved, [state_of[id(m)] for m in involved])
    states = [state_of[id(m)] for m in tuned]
    base_state = None if base is None else state_of[id(base)]
    work, out_type = _dtype(dtype), _dtype(out_dtype)
    merged = {}
    for name, first in states[0].items():
        tensors = [s[name] for s in states]
        if not first.is_floating_point():
            if any(not torch.equal(t, first) for t in tensors[1:]):
                raise SbertError(f"merge: the models differ in {name!r}, which is not a floating-point weight")
            merged[name] = first
            continue
        own = None if base_state is None else base_state[name].to(work or first.dtype)
        value = _merge_tensor(method, [t.to(work or t.dtype) for t in tensors], own, parameters)
        merged[name] = value.to(out_type or first.dtype)
    out = copy.deepcopy(loaded[0])
    out.load_state_dict(merged, strict=True)
    if hasattr(out, "mark_weights_changed"):
        out.mark_weights_changed()
    return out.eval()


def _load(cls: Any, model: Any, device: Any, load_kwargs: dict[str, Any], cache: dict[str, Any]) -> Any:
    if isinstance(model, str | os.PathLike):
        key = os.path.realpath(model)
        if key not in cache:
            cache[key] = cls(str(model), device=device, **load_kwargs)
        return cache[key]
    return model


def _check_compatible(models: list[Any], states: list[dict[str, torch.Tensor]]) -> None:
    """The same tensor names and shapes (from each model's state dict), and the same tokenizer vocabulary."""
    shapes = [{k: tuple(v.shape) for k, v in state.items()} for state in states]
    for i, other in enumerate(shapes[1:], start=1):
        if other != shapes[0]:
            differ = sorted(set(other.items()) ^ set(shapes[0].items()))[:3]
            raise SbertError(f"merge: model {i} does not match model 0 (tensors differ: {differ})")
    vocabs: list[dict[str, int]] = [getattr(getattr(m, "tokenizer", None), "get_vocab", dict)() for m in models]
    if any(v != vocabs[0] for v in vocabs[1:]):
        raise SbertError("merge: the models' tokenizers have different vocabularies")


def _dtype(name: Any) -> torch.dtype | None:
    if name is None or isinstance(name, torch.dtype):
        return name
    found = getattr(torch, str(name), None)
    if not isinstance(found, torch.dtype):
        raise SbertError(f"merge: unknown dtype {name!r}")
    return found


def _weights(parameters: dict[str, Any], n: int) -> list[float]:
    weight = parameters.get("weight", 1.0)
    weights = [float(w) for w in weight] if isinstance(weight, list | tuple) else [float(weight)] * n
    if len(weights) != n:
        raise SbertError(f"merge: {len(weights)} weights for {n} models")
    return weights


def _merge_tensor(method: str, tensors: list[torch.Tensor], base: torch.Tensor | None,
                  parameters: dict[str, Any]) -> torch.Tensor:  # fmt: skip
    if method == "slerp":  # `tensors`: the one model besides the base
        assert base is not None
        return _slerp(float(parameters.get("t", 0.5)), base, tensors[0])
    if method == "task_arithmetic":  # `tensors`: the tuned models, the base left out
        assert base is not None
        deltas = [t - base for t in tensors]
        weights = _weights(parameters, len(deltas))
        total = _weighted_sum(weights, deltas)
        if parameters.get("normalize", False):
            total = total / sum(weights)
        return base + total
    weights = _weights(parameters, len(tensors))
    total = _weighted_sum(weights, tensors)
    return total / sum(weights) if parameters.get("normalize", True) else total


def _weighted_sum(weights: list[float], tensors: list[torch.Tensor]) -> torch.Tensor:
    total = torch.zeros_like(tensors[0])
    for w, t in zip(weights, tensors, strict=True):
        total += w * t
    return total


def _slerp(t: float, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Spherical interpolation from `a` (t=0) to `b` (t=1) on their directions, applied to the tensors."""
    cos = torch.dot(a.flatten() / a.norm().clamp_min(1e-12), b.flatten() / b.norm().clamp_min(1e-12))
    if abs(float(cos)) > COLLINEAR:
        return (1 - t) * a + t * b
    omega = torch.arccos(cos.clamp(-1.0, 1.0))
    return (torch.sin((1 - t) * omega) * a + torch.sin(t * omega) * b) / torch.sin(omega)
