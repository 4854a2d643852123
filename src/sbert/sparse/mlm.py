"""A masked-language-model backbone whose output is its vocabulary logits (SPLADE's input).

Its head is split off where the family is known, so the engine can run the vocabulary projection on
real tokens only, a chunk at a time (sparse/engine.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Self

import torch
from torch import Tensor
from transformers import AutoModelForMaskedLM

from sbert.errors import ModelFormatError
from sbert.formats.layout import architectures, read_json
from sbert.modules.base import Features
from sbert.modules.transformer import Transformer

# sentence-transformers 6 writes these beside max_seq_length for a fill-mask Transformer.
FILL_MASK_CONFIG = {
    "transformer_task": "fill-mask",
    "modality_config": {"text": {"method": "forward", "method_output_name": "logits"}},
    "module_output_name": "token_embeddings",
}
# The attribute holding the MLM head (hidden states -> logits), by the family's MaskedLM class.
_HEADS = {"BertForMaskedLM": "cls", "RobertaForMaskedLM": "lm_head", "XLMRobertaForMaskedLM": "lm_head",
          "CamembertForMaskedLM": "lm_head", "MPNetForMaskedLM": "lm_head", "AlbertForMaskedLM": "predictions",
          "ElectraForMaskedLM": None, "ModernBertForMaskedLM": None, "DistilBertForMaskedLM": None}  # fmt: skip


class MLMTransformer(Transformer):
    """Tokenizes text and maps it to MLM logits (B, T, V) as `token_embeddings`."""

    auto_class: ClassVar[Any] = AutoModelForMaskedLM

    def get_config(self) -> dict[str, Any]:
        """sentence_bert_config.json, with the fill-mask task sentence-transformers reads."""
        return {**super().get_config(), **FILL_MASK_CONFIG}

    @classmethod
    def load(cls, path: Path, trust_remote_code: bool = False, dtype: str | torch.dtype | None = None) -> Self:
        """Load, refusing a checkpoint without MLM head weights (the head would be random)."""
        check_mlm_head(path)
        return super().load(path, trust_remote_code, dtype)

    @property
    def vocab_size(self) -> int:
        """Width of the logits: the sparse vector's dimension."""
        return int(self.auto_model.get_output_embeddings().out_features)

    def split(self) -> tuple[torch.nn.Module, Callable[[Tensor], Tensor]] | None:
        """(backbone, head) where the family's head is known, else None (the engine then runs it whole)."""
        model = self.auto_model
        name = _HEADS.get(type(model).__name__)
        if name is None:
            return None
        return model.base_model, getattr(model, name)

    def forward(self, features: Features) -> Features:
        """`token_embeddings` = the MLM logits of every position (padded; the training path)."""
        features["token_embeddings"] = self.auto_model(**self.backbone_inputs(features), return_dict=True).logits
        return features


def is_fill_mask(folder: Path, type_name: str) -> bool:
    """Whether a Transformer entry of modules.json is an MLM one (MLMTransformer, or transformer_task fill-mask)."""
    if type_name.rsplit(".", 1)[-1] == "MLMTransformer":
        return True
    config = folder / "sentence_bert_config.json"
    return config.is_file() and read_json(config).get("transformer_task") == "fill-mask"


def check_mlm_head(folder: Path) -> None:
    """One line when the folder's weights are of a backbone without an MLM head."""
    names = architectures(folder)
    if names and not any("MaskedLM" in a or "ForPreTraining" in a for a in names):
        raise ModelFormatError(
            f"{folder}: a SPLADE model needs a masked-language-model head, but these weights are a "
            f"{', '.join(names)} without one"
        )
