"""Rebuild a model folder's module chain (finding the folder: sbert/model_dirs.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from sbert.adapters.peft_io import is_adapter_dir
from sbert.errors import ModelFormatError
from sbert.layout import MODULES_FILE, SPARSE_MODULES, ModuleEntry, read_modules
from sbert.modules import Module, Pooling, Router, Transformer, module_class

log = logging.getLogger(__name__)


def load_modules(root: Path, trust_remote_code: bool = False, dtype: str | torch.dtype | None = None) -> list[Module]:
    """Rebuild the chain: from modules.json, or Transformer + mean pooling for a plain encoder.

    The encoder's weights load in `dtype` (None: fp32, whatever the file stores); heads are fp32.
    """
    if not (root / MODULES_FILE).is_file():
        if is_adapter_dir(root):  # a bare PEFT adapter folder: its base model plus mean pooling
            log.warning("%s has no %s: using its adapter's base encoder with mean pooling", root, MODULES_FILE)
            transformer = Transformer.from_adapter(root, trust_remote_code=trust_remote_code, dtype=dtype)
            return [transformer, Pooling(transformer.embedding_dimension, "mean")]
        if not (root / "config.json").is_file():
            raise ModelFormatError(f"{root}: neither {MODULES_FILE} nor a Hugging Face config.json")
        log.warning("%s has no %s: using it as a plain encoder with mean pooling", root, MODULES_FILE)
        transformer = Transformer.from_pretrained(root, trust_remote_code=trust_remote_code, dtype=dtype)
        return [transformer, Pooling(transformer.embedding_dimension, "mean")]

    entries = read_modules(root)
    sparse = [e.class_name for e in entries if e.class_name in SPARSE_MODULES]
    if sparse:
        raise ModelFormatError(f"{root}: a sparse model ({', '.join(sparse)}): load it with sbert.SparseEncoder")
    if any(e.class_name == "MultiVectorMask" or e.type.startswith("pylate.") for e in entries):
        raise ModelFormatError(f"{root}: a multi-vector (ColBERT) model: load it with sbert.MultiVectorEncoder")
    return load_entries(root, entries, trust_remote_code, dtype)


def load_entries(
    root: Path, entries: list[ModuleEntry], trust_remote_code: bool = False, dtype: str | torch.dtype | None = None
) -> list[Module]:
    """The modules `entries` (of root's modules.json) name, each loaded from its folder by its class's rules."""

    def load_one(type_name: str, folder: Path) -> Module:
        cls = module_class(type_name)
        if cls is Transformer:
            return Transformer.load(folder, trust_remote_code=trust_remote_code, dtype=dtype)
        if cls is Router:  # its routes' modules load by the same rules (remote code, dtype)
            return Router.load_routes(folder, load_one)
        return cls.load(folder)

    modules = [load_one(entry.type, root / entry.path) for entry in entries]
    if not modules:
        raise ModelFormatError(f"{root / MODULES_FILE}: lists no modules")
    return modules
