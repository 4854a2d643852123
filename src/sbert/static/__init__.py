"""The static-embedding tier: a token-vector table distilled from a sentence encoder (no torch to encode)."""

from __future__ import annotations

from sbert.static.model import StaticEncoder, is_static_dir

__all__ = ["StaticEncoder", "is_static_dir"]
