"""L2 normalisation of the sentence vector (or, in a multi-vector model, of every token vector)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

from torch import Tensor
from torch.nn import functional

from sbert.modules.base import Features, Module

SENTENCE = "sentence_embedding"


def l2_normalize(vectors: Tensor) -> Tensor:
    """Scale each vector (the last axis) to unit length (zero vectors stay zero)."""
    # vectors: (..., D) -> (..., D)
    return functional.normalize(vectors, p=2.0, dim=-1)


class Normalize(Module):
    """Normalises `module_input_name` (the sentence embedding by default) to unit length.

    sentence-transformers 6 writes config.json with the feature names; older folders have none.
    """

    module_type = "sentence_transformers.models.Normalize"

    def __init__(self, module_input_name: str = SENTENCE, module_output_name: str | None = None) -> None:
        super().__init__()
        self.input_name, self.output_name = module_input_name, module_output_name or module_input_name

    def forward(self, features: Features) -> Features:
        """Write the unit-length version of the input feature to the output feature."""
        features[self.output_name] = l2_normalize(features[self.input_name])
        return features

    def get_config(self) -> dict[str, Any]:
        """The feature names, as sentence-transformers 6 writes them."""
        return {"module_input_name": self.input_name, "module_output_name": self.output_name}

    def save(self, path: Path) -> None:
        """The folder, and its config only when it names non-default features (older readers expect none)."""
        path.mkdir(parents=True, exist_ok=True)
        if self.input_name != SENTENCE or self.output_name != SENTENCE:
            super().save(path)

    @classmethod
    def load(cls, path: Path) -> Self:
        """Read the feature names when the folder has a config."""
        if not (path / cls.config_file).is_file():
            return cls()
        config = cls.read_config(path)
        return cls(str(config.get("module_input_name", SENTENCE)), config.get("module_output_name"))
