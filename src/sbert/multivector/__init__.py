"""Late interaction (ColBERT): multi-vector models in sentence-transformers 6's and PyLate's layouts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sbert.multivector.layout import Expansion, MultiVectorSettings

if TYPE_CHECKING:
    from sbert.multivector.model import MultiVectorEncoder


def __getattr__(name: str) -> Any:
    # Imported on first use: detecting the kind (layout.py) must not load torch or the graph runtimes.
    if name == "MultiVectorEncoder":
        from sbert.multivector.model import MultiVectorEncoder

        return MultiVectorEncoder
    raise AttributeError(f"module 'sbert.multivector' has no attribute {name!r}")


__all__ = ["Expansion", "MultiVectorEncoder", "MultiVectorSettings"]
