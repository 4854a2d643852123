"""MultiVectorMask: the last module of a multi-vector (ColBERT) chain; it records which tokens are scored.

The rules themselves (expansion, skiplist, kept ids) are applied where the rows are padded
(multivector/tokens.py), from the settings this module's config holds; the module keeps
sentence-transformers 6's layout (`config.json`: skiplist_words, skiplist_tasks, keep_only_token_ids).
"""

from __future__ import annotations

from typing import Any

from sbert.modules.base import Features, Module


class MultiVectorMask(Module):
    """Carries the scoring-mask settings in a chain; its forward changes nothing."""

    module_type = "sentence_transformers.multi_vector_encoder.modules.multi_vector_mask.MultiVectorMask"

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.config = dict(config or {})

    def forward(self, features: Features) -> Features:
        """The scored positions were chosen when the batch was padded."""
        return features

    def get_config(self) -> dict[str, Any]:
        """The config as read (or as the encoder set it)."""
        return dict(self.config)

    @classmethod
    def load(cls, path: Any) -> MultiVectorMask:
        """Read config.json."""
        return cls(cls.read_config(path))
