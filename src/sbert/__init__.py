"""sbert: Sentence-BERT sentence embeddings (library, CLI and server)."""

from __future__ import annotations

__version__ = "0.1.0"

from sbert.model import SentenceEncoder

__all__ = ["SentenceEncoder", "__version__"]
