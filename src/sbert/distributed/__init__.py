"""Scale-out on Ray Data: the same encoder in an actor pool, for corpora beyond one machine (extra `[ray]`)."""

from __future__ import annotations

from sbert.errors import SbertError
from sbert.install_hint import install_hint


def require_ray() -> None:
    """Fail with the extra to install when Ray Data is missing."""
    try:
        import ray.data  # noqa: F401
    except ImportError:
        raise SbertError(f"Ray encoding needs Ray Data: {install_hint('ray')}") from None
