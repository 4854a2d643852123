"""sentence-transformers' public surface against sbert's, read with inspect (no hand-written list of names).

`differences(reference, ours)` lists every public name the reference has that ours lacks, and every
callable whose parameters differ (a parameter missing, out of order, or with another default).
"""

from __future__ import annotations

import inspect
from typing import Any


def public_names(obj: Any) -> list[str]:
    """Public attributes of a module (what it defines or re-exports, not submodules) or a class."""
    if inspect.ismodule(obj):
        names = getattr(obj, "__all__", None) or [n for n in vars(obj) if not n.startswith("_")]
        return sorted(n for n in names if not n.startswith("_") and not inspect.ismodule(getattr(obj, n, None)))
    return sorted(n for n in dir(obj) if not n.startswith("_"))


def _default(parameter: inspect.Parameter) -> Any:
    """A default in a comparable form: functions by name, modules by repr, enum members by value."""
    value = parameter.default
    if inspect.isfunction(value):
        return value.__name__
    if hasattr(value, "forward") and hasattr(value, "parameters"):  # a torch module instance (MSELoss())
        return repr(value)
    if hasattr(value, "value") and type(value).__module__ != "builtins":  # an enum member: compare by value
        return value.value
    return value


def _same_default(ref: inspect.Parameter, ours: inspect.Parameter) -> bool:
    """Equal defaults; a lambda or a dataclass default factory stands for any default of its kind."""
    if _default(ref) == "<lambda>":
        return callable(ours.default)
    if "factory" in repr(ref.default).lower():  # a dataclass default_factory: the values are compared elsewhere
        return True
    return bool(_default(ref) == _default(ours))


def parameter_gap(reference: Any, ours: Any) -> str | None:
    """How `ours`'s signature falls short of `reference`'s, or None when it takes every argument the same way."""
    try:
        ref, our = inspect.signature(reference), inspect.signature(ours)
    except (TypeError, ValueError):
        return None
    ours_params = our.parameters
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in ours_params.values())
    positional = [n for n, p in ours_params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for i, (name, p) in enumerate((n, p) for n, p in ref.parameters.items() if n != "self"):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if name not in ours_params:
            if not takes_kwargs:
                return f"no parameter {name!r}"
            continue
        if p.kind is p.POSITIONAL_OR_KEYWORD and [n for n in positional if n != "self"][i : i + 1] != [name]:
            return f"parameter {name!r} is not at position {i}"
        if p.default is not p.empty and not _same_default(p, ours_params[name]):
            return f"{name}={_default(ours_params[name])!r}, not {_default(p)!r}"
    return None


def differences(reference: Any, ours: Any, prefix: str) -> dict[str, str]:
    """{qualified name: what differs} for every public name of `reference` that `ours` lacks or takes otherwise."""
    out = {}
    for name in public_names(reference):
        ref_value = getattr(reference, name, None)
        if not hasattr(ours, name):
            out[f"{prefix}.{name}"] = "missing"
            continue
        our_value = getattr(ours, name)
        if inspect.isclass(ref_value) and inspect.isclass(our_value):
            gap = parameter_gap(ref_value.__init__, our_value.__init__)
        elif callable(ref_value) and callable(our_value):
            gap = parameter_gap(ref_value, our_value)
        else:
            gap = None
        if gap:
            out[f"{prefix}.{name}"] = gap
    return out
