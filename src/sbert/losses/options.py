"""sentence-transformers' loss arguments that sbert's engine does not implement: refused unless at their default.

A drop-in script that sets one of these would otherwise train a different objective than it asked for;
a one-line error names the argument instead (docs/migrating.md lists them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import Tensor

from sbert.errors import SbertError

Similarity = Callable[[Tensor, Tensor], Tensor]


def refuse_unsupported(loss: str, given: dict[str, Any], defaults: dict[str, Any]) -> None:
    """Raise SbertError naming the first argument of `given` that differs from its default in `defaults`."""
    for name, default in defaults.items():
        value = given[name]
        if value != default:
            raise SbertError(f"{loss}({name}={value!r}) is not supported by sbert's engine (only {default!r})")


def similarity_name(fn: Similarity | None, default: str) -> str:
    """The name of a similarity function given as `similarity_fct` ("cos_sim", "dot_score", ...), or `default`."""
    return default if fn is None else str(getattr(fn, "__name__", type(fn).__name__))
