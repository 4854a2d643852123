"""Which multi-vector model `sbert train` trains: a ColBERT folder as it is, or a new one on a plain encoder."""

from __future__ import annotations

from typing import Any

from sbert.formats.model_dirs import resolve_model_dir


def multi_vector_for_training(name: str, wants_colbert: bool, device: Any = None) -> Any:
    """A MultiVectorEncoder to train, or None when `name` is not one and the run trains no `colbert` objective.

    A plain Hugging Face encoder with the `colbert` objective gets sentence-transformers 6's new-model
    default: a 128-wide projection of every token (no bias), normalized, no prompts, no expansion.
    """
    from sbert.multivector import MultiVectorEncoder
    from sbert.multivector.layout import is_multivector_dir

    root = resolve_model_dir(name)
    if is_multivector_dir(root):
        return MultiVectorEncoder.load(root, device=device)
    if wants_colbert and not (root / "modules.json").is_file():
        return MultiVectorEncoder.from_transformer(root, device=device)
    return None
