"""The cross-encoder kind: a sequence-classification transformer that scores a pair of texts at once.

sbert's own class is `sbert.cross_encoder.model.CrossEncoder` (what `sbert.load`, the server and the index
use). As in sentence-transformers 6.2, `sbert.cross_encoder.CrossEncoder` is the drop-in class, and
`CrossEncoderTrainer`, `CrossEncoderTrainingArguments`, `.losses` and `.evaluation` answer here; they load
on first use, since they sit above this package (sbert/compat).
"""

from typing import Any

from sbert.cross_encoder.model import ACTIVATIONS

_DROP_IN = {
    "CrossEncoder": "sbert.compat.cross_encoder",
    "CrossEncoderTrainer": "sbert.compat.cross_trainer",
    "CrossEncoderTrainingArguments": "sbert.compat.cross_trainer",
}


def __getattr__(name: str) -> Any:
    """sentence-transformers' names, loaded on first use."""
    if name in _DROP_IN:
        import importlib

        return getattr(importlib.import_module(_DROP_IN[name]), name)
    raise AttributeError(f"module 'sbert.cross_encoder' has no attribute {name!r}")


__all__ = ["ACTIVATIONS", "CrossEncoder", "CrossEncoderTrainer", "CrossEncoderTrainingArguments"]
