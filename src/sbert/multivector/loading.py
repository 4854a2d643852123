"""Build a multi-vector chain from a folder in either layout, and write PyLate's own files back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sbert.dense.loading import load_entries
from sbert.errors import ModelFormatError
from sbert.formats import layout
from sbert.formats.modality import is_retrieval_class
from sbert.formats.model_config import EncoderSettings, settings_config
from sbert.modules import Dense, Module, MultiVectorMask, Normalize, Transformer
from sbert.modules.multimodal import MultimodalTransformer
from sbert.multivector.layout import (
    PYLATE_TYPE,
    MultiVectorSettings,
    is_stanford_dir,
    read_multivector_settings,
    read_stanford_settings,
)

TOKENS = "token_embeddings"
PYLATE_DENSE = "pylate.models.Dense.Dense"
# The keys PyLate's Dense takes (its __init__ has no feature names).
_PYLATE_DENSE_KEYS = ("in_features", "out_features", "bias", "activation_function", "use_residual")


def load_multivector(root: Path, trust_remote_code: bool = False) -> tuple[list[Module], MultiVectorSettings]:
    """The chain (Transformer, token Dense heads, Normalize) and settings of the model in `root`."""
    if is_stanford_dir(root):
        return _stanford(root, trust_remote_code)
    if not (root / layout.MODULES_FILE).is_file() and is_page_model_dir(root):  # a plain ColPali-class folder
        return [MultimodalTransformer.from_pretrained(root, trust_remote_code=trust_remote_code)], MultiVectorSettings()
    if not (root / layout.MODULES_FILE).is_file():
        raise ModelFormatError(f"{root}: a multi-vector model needs {layout.MODULES_FILE}")
    entries = layout.read_modules(root)
    modules = load_entries(root, entries, trust_remote_code)
    transformer = modules[0]
    if not isinstance(transformer, Transformer):
        raise ModelFormatError(f"{root / layout.MODULES_FILE}: a multi-vector model starts with a Transformer")
    t_path = root / entries[0].path
    t_config = Transformer.read_config(t_path) if (t_path / Transformer.config_file).is_file() else {}
    mask = next((m for m in modules if isinstance(m, MultiVectorMask)), None)
    settings = read_multivector_settings(root, t_config, mask.get_config() if mask else None)
    for module in modules:
        if isinstance(module, Dense):  # PyLate's Dense always projects the token embeddings
            module.input_name = module.output_name = TOKENS
    heads = [m for m in modules[1:] if not isinstance(m, MultiVectorMask)]
    if settings.flavor == "pylate" and not any(isinstance(m, Normalize) for m in heads):
        heads.append(Normalize(TOKENS))  # PyLate normalizes each token inside encode
    unknown = [type(m).__name__ for m in heads if not isinstance(m, (Dense, Normalize))]
    if unknown:
        raise ModelFormatError(f"{root / layout.MODULES_FILE}: modules a multi-vector chain cannot run: {unknown}")
    return [transformer, *heads], settings


def is_page_model_dir(root: Path) -> bool:
    """Whether `root` holds a `*ForRetrieval` model (ColPali, ColQwen2): queries and pages by its own forward."""
    return any(is_retrieval_class(a) for a in layout.architectures(root))


def _stanford(root: Path, trust_remote_code: bool) -> tuple[list[Module], MultiVectorSettings]:
    """A Stanford ColBERT checkpoint: the encoder from the folder, the projection from its `linear.weight`."""
    from sbert.modules.base import load_weights

    transformer = Transformer.from_pretrained(root, trust_remote_code=trust_remote_code)
    weight = load_weights(root).get("linear.weight")
    if weight is None:
        raise ModelFormatError(f"{root}: a Stanford ColBERT checkpoint without linear.weight")
    out_features, in_features = weight.shape
    dense = Dense(int(in_features), int(out_features), bias=False, module_input_name=TOKENS, module_output_name=TOKENS)
    dense.linear.weight.data.copy_(weight)
    return [transformer, dense, Normalize(TOKENS)], read_stanford_settings(root)


def save_pylate_files(folder: Path, dense: Dense, mv: MultiVectorSettings, settings: EncoderSettings) -> None:
    """PyLate's Dense type and config, and its keys in config_sentence_transformers.json (after `save_chain`)."""
    entries = layout.read_modules(folder)
    rows = [e if e.class_name != "Dense" else layout.ModuleEntry(e.idx, e.name, e.path, PYLATE_DENSE) for e in entries]
    layout.write_modules(folder, rows)
    config = dense.get_config()
    layout.write_json(folder / rows[1].path / "config.json", {k: config.get(k, False) for k in _PYLATE_DENSE_KEYS})
    model: dict[str, Any] = {
        **settings_config(settings), "model_type": PYLATE_TYPE, "similarity_fn_name": "MaxSim",
        "query_prefix": mv.query_prefix, "document_prefix": mv.document_prefix,
        "query_length": mv.query_length, "document_length": mv.document_length,
        "attend_to_expansion_tokens": bool(mv.expansion and mv.expansion.attend),
        "skiplist_words": list(mv.skiplist_words), "do_query_expansion": mv.expansion is not None,
    }  # fmt: skip
    layout.write_json(folder / layout.MODEL_CONFIG_FILE, model)
