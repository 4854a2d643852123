"""Any Hugging Face encoder (BERT, RoBERTa, ALBERT, DistilBERT, MPNet, MiniLM) as the first module."""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import torch
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from sbert.errors import ModelFormatError
from sbert.layout import TRANSFORMER_CONFIG_FILE, write_json
from sbert.modules.base import Features, Module

log = logging.getLogger(__name__)

# Encoders whose position ids start after the padding index, so they hold two
# fewer usable positions than max_position_embeddings says.
_OFFSET_POSITION_MODELS = {"roberta", "xlm-roberta", "camembert", "mpnet", "data2vec-text", "longformer"}
_MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class Transformer(Module):
    """Tokenizes text and maps token ids to contextual token embeddings."""

    module_type = "sentence_transformers.models.Transformer"
    config_file = TRANSFORMER_CONFIG_FILE

    def __init__(
        self,
        auto_model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        max_seq_length: int | None = None,
        do_lower_case: bool = False,
    ) -> None:
        super().__init__()
        self.auto_model = auto_model
        self.tokenizer = tokenizer
        self.do_lower_case = do_lower_case
        self.position_limit = position_limit(auto_model.config)
        tok_limit = tokenizer.model_max_length
        default = min(self.position_limit, int(tok_limit)) if 0 < tok_limit < 1e9 else self.position_limit
        self.max_seq_length = max_seq_length or default
        accepted = inspect.signature(auto_model.forward).parameters
        self._inputs = tuple(k for k in _MODEL_INPUTS if k in accepted)
        if tokenizer.pad_token_id is None:
            raise ModelFormatError(f"tokenizer of {auto_model.name_or_path} has no padding token")

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike[str], max_seq_length: int | None = None, trust_remote_code: bool = False
    ) -> Self:
        """Load encoder weights and tokenizer from a Hugging Face directory (safetensors preferred)."""
        config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
        # weights_only: a pickle checkpoint is read as tensors only; it can never run code.
        model = AutoModel.from_pretrained(path, config=config, trust_remote_code=trust_remote_code, weights_only=True)
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
        return cls(model, tokenizer, max_seq_length=max_seq_length)

    @classmethod
    def load(cls, path: Path, trust_remote_code: bool = False) -> Self:
        """Load from a sentence-transformers module folder (reads sentence_bert_config.json if present)."""
        config: dict[str, Any] = {}
        if (path / cls.config_file).is_file():
            config = cls.read_config(path)
        module = cls.from_pretrained(path, config.get("max_seq_length"), trust_remote_code)
        module.do_lower_case = bool(config.get("do_lower_case", False))
        return module

    def get_config(self) -> dict[str, Any]:
        """The sentence_bert_config.json fields."""
        return {"max_seq_length": self.max_seq_length, "do_lower_case": self.do_lower_case}

    def save(self, path: Path) -> None:
        """Write weights (safetensors), tokenizer files and sentence_bert_config.json."""
        path.mkdir(parents=True, exist_ok=True)
        self.auto_model.save_pretrained(path)
        # Recorded in tokenizer_config.json too, where sentence-transformers 6 looks for it.
        self.tokenizer.model_max_length = self.max_seq_length
        self.tokenizer.save_pretrained(path)
        write_json(path / self.config_file, self.get_config())

    @property
    def max_seq_length(self) -> int:
        """Inputs longer than this many tokens (special tokens included) are truncated."""
        return self._max_seq_length

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        if not 2 <= value <= self.position_limit:
            raise ValueError(f"max_seq_length must be in [2, {self.position_limit}] for this encoder, got {value}")
        self._max_seq_length = int(value)

    @property
    def embedding_dimension(self) -> int:
        """Width of the token embeddings."""
        return int(self.auto_model.config.hidden_size)

    def token_ids(self, texts: Sequence[str]) -> tuple[list[list[int]], list[int]]:
        """Token ids (with special tokens, truncated to max_seq_length) and the indices that were cut."""
        if not texts:
            return [], []
        if self.do_lower_case:
            texts = [t.lower() for t in texts]
        limit = self.max_seq_length
        ids: list[list[int]] = self.tokenizer(
            list(texts),
            truncation=True,
            max_length=limit,
            add_special_tokens=True,
            return_attention_mask=False,
            return_token_type_ids=False,
        )["input_ids"]
        # Only sequences that hit the limit can have been cut: tokenize those once more with
        # one spare slot to tell "exactly full" from "truncated".
        full = [i for i, row in enumerate(ids) if len(row) >= limit]
        cut: list[int] = []
        if full:
            again = self.tokenizer(
                [texts[i] for i in full],
                truncation=True,
                max_length=limit + 1,
                return_attention_mask=False,
                return_token_type_ids=False,
            )["input_ids"]
            cut = [i for i, row in zip(full, again, strict=True) if len(row) > limit]
        return ids, cut

    def pad(self, rows: Sequence[Sequence[int]]) -> Features:
        """Pad a batch of id lists to its longest member, on the tokenizer's padding side."""
        width = max((len(r) for r in rows), default=0)
        input_ids = torch.full((len(rows), width), int(self.tokenizer.pad_token_id), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        left = self.tokenizer.padding_side == "left"
        for i, row in enumerate(rows):
            span = slice(width - len(row), width) if left else slice(0, len(row))
            input_ids[i, span] = torch.as_tensor(row, dtype=torch.long)
            mask[i, span] = 1
        features: Features = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            features["token_type_ids"] = torch.zeros_like(input_ids)
        return features

    def tokenize(self, texts: Sequence[str]) -> Features:
        """Token ids, padded and ready for `forward` (the path training uses)."""
        return self.pad(self.token_ids(texts)[0])

    def forward(self, features: Features) -> Features:
        """Add `token_embeddings` (B, T, H) from the encoder's last hidden state."""
        inputs = {k: features[k] for k in self._inputs if k in features}
        output = self.auto_model(**inputs, return_dict=True)
        features["token_embeddings"] = output.last_hidden_state
        return features


def position_limit(config: Any) -> int:
    """The longest input the encoder's position table can take."""
    limit = int(getattr(config, "max_position_embeddings", 512) or 512)
    if getattr(config, "model_type", "") in _OFFSET_POSITION_MODELS:
        limit -= int(getattr(config, "pad_token_id", 1) or 1) + 1
    return limit
