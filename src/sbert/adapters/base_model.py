"""Find an adapter's base model: a local path, an alias or a Hub id, as SentenceEncoder.load finds models."""

from __future__ import annotations

from pathlib import Path

from sbert.adapters.peft_io import ADAPTER_CONFIG_FILE, adapter_base, is_adapter_dir
from sbert.errors import ModelFormatError, ModelNotFoundError
from sbert.formats.layout import MODULES_FILE, read_modules
from sbert.formats.model_dirs import resolve_model_dir


def base_weights_dir(adapter_folder: Path) -> Path:
    """The folder holding the base model's Hugging Face weights (config.json) for the adapter in `adapter_folder`.

    `base_model_name_or_path` may be an absolute path, a path relative to the working directory or to
    the adapter's folder, an alias or a Hub id; a sentence-transformers base gives its Transformer folder.
    """
    name = adapter_base(adapter_folder)
    candidates = [Path(name).expanduser(), adapter_folder / name]
    root = next((c for c in candidates if c.is_dir()), None)
    if root is None:
        try:
            root = resolve_model_dir(name)
        except ModelNotFoundError as e:
            raise ModelNotFoundError(
                f"{adapter_folder / ADAPTER_CONFIG_FILE}: base model {name!r} not found ({str(e).split(': ', 1)[-1]})"
            ) from None
    folder = transformer_folder(root)
    if is_adapter_dir(folder):
        raise ModelFormatError(f"{adapter_folder}: base model {folder} is itself an adapter; merge it first")
    if not (folder / "config.json").is_file():
        raise ModelFormatError(f"{adapter_folder}: base model {folder} has no config.json")
    return folder


def transformer_folder(root: Path) -> Path:
    """The Transformer module's folder of a sentence-transformers model (the root itself otherwise)."""
    if not (root / MODULES_FILE).is_file():
        return root
    for entry in read_modules(root):
        if entry.class_name == "Transformer":
            return root / entry.path
    return root
