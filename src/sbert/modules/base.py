"""The contract every module in a SentenceEncoder chain follows."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from sbert.errors import ModelFormatError, first_line
from sbert.formats.layout import read_json, write_json

# A features dict flows through the chain: input_ids/attention_mask in,
# token_embeddings and sentence_embedding added by the modules on the way.
Features = dict[str, Any]

WEIGHTS_FILE = "model.safetensors"
LEGACY_WEIGHTS_FILE = "pytorch_model.bin"


class Module(nn.Module):
    """A step of the chain: maps a features dict to a features dict and saves its own config."""

    # The `type` written to modules.json; sentence-transformers resolves its own names.
    module_type: ClassVar[str]
    config_file: ClassVar[str] = "config.json"

    def forward(self, features: Features) -> Features:
        """Return `features` with this module's outputs added."""
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments that rebuild this module."""
        return {}

    def save(self, path: Path) -> None:
        """Write config and (when the module has parameters) safetensors weights into `path`."""
        path.mkdir(parents=True, exist_ok=True)
        write_json(path / self.config_file, self.get_config())
        state = self.state_dict()
        if state:
            save_file({k: v.detach().contiguous().cpu() for k, v in state.items()}, str(path / WEIGHTS_FILE))

    @classmethod
    def load(cls, path: Path) -> Self:
        """Rebuild the module from the files `save` wrote."""
        module = cls(**cls.read_config(path))
        if any(True for _ in module.parameters()):
            module.load_state_dict(load_weights(path))
        return module

    @classmethod
    def read_config(cls, path: Path) -> dict[str, Any]:
        """Read this module's config file from `path`."""
        config_path = path / cls.config_file
        if not config_path.is_file():
            raise ModelFormatError(f"{config_path}: missing module config")
        config = read_json(config_path)
        if not isinstance(config, dict):
            raise ModelFormatError(f"{config_path}: expected a JSON object")
        return config


def load_weights(path: Path) -> dict[str, torch.Tensor]:
    """Load a module's weights: safetensors, or a pickle read with weights_only (no code runs)."""
    safe = path / WEIGHTS_FILE
    if safe.is_file():
        return load_file(str(safe))
    legacy = path / LEGACY_WEIGHTS_FILE
    if legacy.is_file():
        try:
            state = torch.load(legacy, map_location="cpu", weights_only=True)
        except Exception as e:
            raise ModelFormatError(f"{legacy}: refused to load ({type(e).__name__}: {first_line(e)})") from None
        return dict(state)
    raise ModelFormatError(f"{path}: no {WEIGHTS_FILE} or {LEGACY_WEIGHTS_FILE}")


def renamed_key(config: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """A module config with an older key for an argument under its current name (sentence-transformers renames)."""
    if old in config and new not in config:
        config = {**{k: v for k, v in config.items() if k != old}, new: config[old]}
    return config


def right_padded(rows: Sequence[Sequence[int]], min_width: int = 0) -> Features:
    """Token id rows right-padded with 0 into `input_ids`, and their `attention_mask` (at least `min_width` wide).

    The padding of the input modules that look ids up in a table (static, word and bag-of-words tables).
    """
    width = max(min_width, *(len(row) for row in rows)) if rows else min_width
    input_ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        input_ids[i, : len(row)] = torch.as_tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    return {"input_ids": input_ids, "attention_mask": mask}
