"""BGE-M3: dense, lexical and ColBERT outputs of one forward (FlagEmbedding's layout)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sbert.m3.layout import is_m3_dir

if TYPE_CHECKING:
    from sbert.m3.model import M3Encoder, colbert_score, lexical_matching_score, pair_scores

_MODEL_NAMES = ("M3Encoder", "colbert_score", "lexical_matching_score", "pair_scores")


def __getattr__(name: str) -> Any:
    # Imported on first use: detecting the kind (layout.py) must not load torch.
    if name in _MODEL_NAMES:
        from sbert.m3 import model

        return getattr(model, name)
    raise AttributeError(f"module 'sbert.m3' has no attribute {name!r}")


__all__ = ["M3Encoder", "colbert_score", "is_m3_dir", "lexical_matching_score", "pair_scores"]
