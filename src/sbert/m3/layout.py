"""BGE-M3's folder, as FlagEmbedding writes it: the encoder, and two Linear heads' state dicts beside it.

Kept apart from the model (no torch import here): `model_kind` asks it before every load.
"""

from __future__ import annotations

from pathlib import Path

COLBERT_HEAD, SPARSE_HEAD = "colbert_linear.pt", "sparse_linear.pt"


def is_m3_dir(root: Path) -> bool:
    """Whether a folder holds BGE-M3's two extra heads (FlagEmbedding's layout)."""
    return (root / COLBERT_HEAD).is_file() and (root / SPARSE_HEAD).is_file()
