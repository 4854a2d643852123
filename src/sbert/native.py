"""The one conversion at every consumer's entry: a drop-in object (sbert.SentenceTransformer, ...) as sbert's own.

The drop-in classes (sbert/compat) are subclasses that give `encode` and friends sentence-transformers'
calling conventions; they name their sbert class as `native_class`. The server, the evaluators, the
trainer and the index call `native(model)` once and then use sbert's conventions: the view shares the
object's modules and settings (training it trains the drop-in object), so nothing is copied.
"""

from __future__ import annotations

import copy
from typing import TypeVar

Model = TypeVar("Model")


def native(model: Model) -> Model:
    """`model` itself, or for a drop-in object a shallow view of it whose class is its sbert class."""
    cls = getattr(type(model), "native_class", None)
    if cls is None or cls is type(model):
        return model
    view = copy.copy(model)
    view.__class__ = cls
    return view
