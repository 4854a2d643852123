"""Which sparse models `sbert train` trains, and how: SPLADE as a SentenceEncoder chain sharing its weights."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sbert.errors import ModelFormatError
from sbert.formats import layout
from sbert.formats.layout import architectures
from sbert.formats.model_dirs import resolve_model_dir
from sbert.sparse.model import SparseEncoder


def splade_for_training(name: str, wants_splade: bool, device: Any = None) -> Any:
    """A SPLADE model to train as a SentenceEncoder chain, or None when `name` is a dense model.

    A SparseEncoder folder of SPLADE loads so; a plain `*ForMaskedLM` checkpoint too when the run trains the
    `splade` objective (SPLADE max pooling on it). CSR trains with `sbert train-csr`: a one-line error.
    """
    root = resolve_model_dir(name)
    if (root / layout.MODULES_FILE).is_file():
        names = {e.class_name for e in layout.read_modules(root)}
        if "SparseAutoEncoder" in names:
            raise ModelFormatError(f"{root}: a CSR model trains with `sbert train-csr`, not `sbert train`")
        if not names & {"SpladePooling", "MLMTransformer"} and not _sparse_router(root, names):
            return None
    elif not wants_splade or not any("MaskedLM" in a for a in architectures(root)):
        return None
    return SparseEncoder.load(root, device=device).as_sentence_encoder()


def _sparse_router(root: Path, names: set[str]) -> bool:
    """Whether the model is a Router of sparse routes (inference-free SPLADE), not a dense Router."""
    if "Router" not in names:
        return False
    entry = next(e for e in layout.read_modules(root) if e.class_name == "Router")
    config = layout.read_router_config(root / entry.path)
    return any(k.endswith(("SpladePooling", "SparseStaticEmbedding")) for k in config.types.values())
