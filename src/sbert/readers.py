"""sentence-transformers 6.2's `sentence_transformers.readers`: `InputExample` (its file readers are not provided)."""

from __future__ import annotations

from sbert.data.examples import InputExample

__all__ = ["InputExample"]

# A package to the import system, so the reference's legacy one-class paths under it resolve (sbert/legacy_paths.py).
__path__: list[str] = []
