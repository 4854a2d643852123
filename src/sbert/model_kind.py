"""Which kind of model a folder holds: dense, sparse, multi-vector, cross-encoder, static or BGE-M3. Decided here.

`sbert.load` and `sbert serve --model` ask this function; each kind's own `load` still refuses a
folder of another kind with a one-line error.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sbert.formats.aliases import DEFAULT_MODEL
from sbert.formats.layout import MODULES_FILE, SPARSE_MODULES, architectures, read_modules
from sbert.formats.modality import is_retrieval_class
from sbert.formats.model_config import read_settings
from sbert.formats.model_dirs import resolve_model_dir

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder
    from sbert.m3 import M3Encoder
    from sbert.m3.views import LexicalView
    from sbert.multivector import MultiVectorEncoder
    from sbert.reranker.model import CrossEncoder
    from sbert.sparse import SparseEncoder
    from sbert.static import StaticEncoder

Kind = Literal["dense", "sparse", "multi-vector", "cross-encoder", "static", "m3"]
# sentence-transformers' `model_type` in config_sentence_transformers.json (written by its 5.x and 6.x saves).
_SAVED_TYPES: dict[str, Kind] = {
    "SentenceTransformer": "dense",
    "SparseEncoder": "sparse",
    "CrossEncoder": "cross-encoder",
}


def kind_of(root: Path) -> Kind:
    """The kind of the model in folder `root`: its saved model_type, else its modules, else its config.json."""
    from sbert.m3.layout import is_m3_dir
    from sbert.multivector.layout import is_multivector_dir
    from sbert.static import is_static_dir

    if is_m3_dir(root):  # FlagEmbedding's heads beside the encoder, whatever sentence-transformers' files say
        return "m3"
    if is_static_dir(root):
        return "static"
    if is_multivector_dir(root):  # PyLate's folders say "ColBERT" or carry its keys
        return "multi-vector"
    saved = _SAVED_TYPES.get(read_settings(root).model_type)
    if saved is not None:
        return saved
    if (root / MODULES_FILE).is_file():
        names = {e.class_name for e in read_modules(root)}
        return "sparse" if names & SPARSE_MODULES else "dense"
    classes = architectures(root)
    if any(is_retrieval_class(a) for a in classes):  # ColPali-class: a matrix of token vectors per input
        return "multi-vector"
    return "cross-encoder" if any(a.endswith("ForSequenceClassification") for a in classes) else "dense"


def load(
    name_or_path: str | os.PathLike[str] = DEFAULT_MODEL, device: str | None = None, **options: Any
) -> SentenceEncoder | SparseEncoder | MultiVectorEncoder | CrossEncoder | StaticEncoder | M3Encoder:
    """Load any kind of model (alias, folder or Hub id) with the class its folder calls for.

    `options` go to that class's `load` (e.g. `trust_remote_code`, `dtype`, `max_active_dims`); a static
    model runs on the CPU, so `device` must be None or "cpu" for one.
    """
    root = resolve_model_dir(name_or_path)
    kind = kind_of(root)
    if kind == "static":
        from sbert.static import StaticEncoder

        if device not in (None, "cpu"):
            raise ValueError(f"device={device!r}: a static model runs on the CPU (numpy)")
        return StaticEncoder.load(root, **options)
    if kind == "m3":
        from sbert.m3 import M3Encoder

        return M3Encoder.load(root, device=device, **options)
    if kind == "sparse":
        from sbert.sparse import SparseEncoder

        return SparseEncoder.load(root, device=device, **options)
    if kind == "multi-vector":
        from sbert.multivector import MultiVectorEncoder

        return MultiVectorEncoder.load(root, device=device, **options)
    if kind == "cross-encoder":
        from sbert.reranker.model import CrossEncoder

        return CrossEncoder.load(root, device=device, **options)
    from sbert.dense.model import SentenceEncoder

    return SentenceEncoder.load(root, device=device, **options)


def load_sparse(name_or_path: str | os.PathLike[str], device: str | None = None) -> SparseEncoder | LexicalView:
    """The sparse model a folder holds: a SparseEncoder (SPLADE), or BGE-M3's lexical weights (its LexicalView)."""
    root = resolve_model_dir(name_or_path)
    if kind_of(root) == "m3":
        from sbert.m3 import M3Encoder
        from sbert.m3.views import LexicalView

        return LexicalView(M3Encoder.load(root, device=device))
    from sbert.sparse import SparseEncoder

    return SparseEncoder.load(root, device=device)


def load_multivector(name_or_path: str | os.PathLike[str], device: str | None = None) -> MultiVectorEncoder:
    """The multi-vector model a folder holds: a ColBERT folder (PyLate's or sbert's), or BGE-M3's ColBERT output."""
    root = resolve_model_dir(name_or_path)
    kind = kind_of(root)
    if kind == "m3":
        from sbert.m3 import M3Encoder
        from sbert.m3.views import colbert_view

        return colbert_view(M3Encoder.load(root, device=device))
    from sbert.errors import ModelFormatError
    from sbert.multivector import MultiVectorEncoder

    if kind != "multi-vector":
        raise ModelFormatError(f"{root}: a {kind} model, not a multi-vector (ColBERT) one or BGE-M3")
    return MultiVectorEncoder.load(root, device=device)
