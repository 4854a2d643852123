"""Where exported graphs live: an `onnx/` folder beside the model, keyed by a digest of its weights.

A cached graph is reused only while the weights, the chain's configuration and the exporter
settings that produced it are unchanged; anything else triggers a fresh export.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch
from torch import nn

from sbert.adapters.peft_io import active_adapter, has_adapter
from sbert.errors import ModelFormatError
from sbert.formats import layout
from sbert.modules.base import Module

MANIFEST = "export.json"
CACHE_ENV = "SBERT_CACHE"


def model_digest(model: nn.Sequential) -> str:
    """sha256 over every tensor (name, shape, dtype, bytes), every module's configuration and the backbone's.

    Modules inside a Router count too; the backbone's Hugging Face config counts because two models
    with the same weights may differ there (Gemma3 with and without bidirectional attention), and so
    does the active LoRA adapter's name (switching adapters changes the vectors, not the state dict).
    """
    digest = hashlib.sha256()
    for module in model.modules():
        if not isinstance(module, Module):
            continue
        config = module.get_config()
        digest.update(f"{type(module).__name__}:{json.dumps(config, sort_keys=True)}".encode())
        auto_model = getattr(module, "auto_model", None)
        backbone = getattr(auto_model, "config", None)
        if backbone is not None:
            digest.update(backbone.to_json_string().encode())
        if auto_model is not None and has_adapter(auto_model):  # every loaded adapter is in the state dict
            digest.update(f"adapter:{active_adapter(auto_model)}".encode())
    for name, tensor in model.state_dict().items():
        digest.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype}".encode())
        # Raw bytes through a uint8 view: works for every dtype, bf16 included.
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def cache_dir(source: Path | None, digest: str) -> Path:
    """`<model dir>/onnx` when the model came from a writable folder, else a user cache folder."""
    if source is not None and os.access(source, os.W_OK):
        return Path(source) / "onnx"
    base = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "sbert")
    return base / "onnx" / digest[:24]


def read_manifest(folder: Path, name: str = MANIFEST) -> dict[str, object]:
    """The cache's manifest (`name`: another graph's), or {} when there is none or it is unreadable (then rebuilt)."""
    try:
        data = layout.read_json(folder / name)
    except (OSError, ModelFormatError):
        return {}
    return data if isinstance(data, dict) else {}


def write_manifest(folder: Path, data: dict[str, object], name: str = MANIFEST) -> None:
    """Atomically record which weights and settings the graphs in `folder` came from."""
    layout.write_json_atomic(folder / name, data)
