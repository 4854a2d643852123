"""Keyword arguments sentence-transformers renamed, still taken under their older names (as its releases take them).

Scripts written for sentence-transformers v2-v5 pass `word_embedding_dimension=`, `pooling_mode_mean_tokens=True`,
`sentence_embedding_dimension=` or `tokenizer=`; 6.3 maps each to its current name with a warning. The
functions and classes that mirror one of those take the older names the same way, through `renamed_kwargs`,
which records its renames on the wrapper (`__sbert_renames__`, what tests/test_renamed_kwargs.py compares with
the reference's own list).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])


def renamed_kwargs(**renames: str) -> Callable[[F], F]:
    """A decorator that passes each older keyword (`old="new"`) under its new name, with a FutureWarning.

    When a call gives both names, the new one wins and the old is dropped (as the reference does).
    """

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old in kwargs:
                    warnings.warn(f"`{old}` was renamed `{new}`", FutureWarning, stacklevel=2)
                    value = kwargs.pop(old)
                    kwargs.setdefault(new, value)
            return func(*args, **kwargs)

        wrapper.__sbert_renames__ = {**getattr(func, "__sbert_renames__", {}), **renames}  # type: ignore[attr-defined]
        return cast(F, wrapper)

    return decorate


# sentence-transformers' pooling_mode_* flags, in the order its Pooling concatenates the modes they turn on.
LEGACY_POOLING_FLAGS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}


def pooling_mode_from_flags(flags: dict[str, Any]) -> str | list[str] | None:
    """The `pooling_mode` v2-v5 `pooling_mode_*=True` flags ask for (mean when none is true); None without flags."""
    if not any(name in flags for name in LEGACY_POOLING_FLAGS):
        return None
    modes = [mode for name, mode in LEGACY_POOLING_FLAGS.items() if flags.get(name)] or ["mean"]
    return modes[0] if len(modes) == 1 else modes
