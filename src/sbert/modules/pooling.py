"""Pooling: token embeddings -> one sentence vector (every mode sentence-transformers has).

mean, max, cls ([CLS] / <s>), mean_sqrt_len_tokens (sum / sqrt(count)), weightedmean (token i of
the real tokens weighted i, 1-based) and lasttoken (the last real token, whatever the padding side:
decoder embedders such as Qwen3-Embedding pool their EOS token).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import torch
from torch import Tensor

from sbert.errors import ModelFormatError
from sbert.modules.base import Features, Module


def divided(summed: Tensor, counts: Tensor, divisor: Tensor | None) -> Tensor:
    """A pooled sum over its row's counts, or over `divisor` (B,) where one is given (WordWeights' weight sums)."""
    counts = counts if divisor is None else divisor.unsqueeze(-1).to(summed.dtype)
    return summed / counts.clamp(min=1e-9)  # an all-padding row gives 0, not NaN


def mean_pool(tokens: Tensor, mask: Tensor, divisor: Tensor | None = None) -> Tensor:
    """Mean of the non-padding token vectors (their sum over `divisor` where one is given)."""
    # tokens: (B, T, H); mask: (B, T) with 1 for real tokens -> (B, H)
    weights = mask.unsqueeze(-1).to(tokens.dtype)
    return divided((tokens * weights).sum(dim=1), weights.sum(dim=1), divisor)


def without_prompt(mask: Tensor, prompt_length: int | Tensor) -> Tensor:
    """The mask with each row's first `prompt_length` real tokens off (after any left padding).

    `prompt_length`: one count for every row, or a (B,) tensor of per-row counts (training batches
    whose columns carry different prompts).
    """
    # mask: (B, T) -> (B, T); a copy, so the caller's mask is untouched
    start = mask.to(torch.int32).argmax(dim=1, keepdim=True)  # first real token of each row
    positions = torch.arange(mask.shape[1], device=mask.device).unsqueeze(0)
    skip = torch.as_tensor(prompt_length, device=mask.device).reshape(-1, 1)  # (1, 1) or (B, 1)
    return mask.masked_fill(positions < start + skip, 0)


def max_pool(tokens: Tensor, mask: Tensor) -> Tensor:
    """Element-wise max over the non-padding token vectors."""
    # tokens: (B, T, H); mask: (B, T) -> (B, H)
    masked = tokens.masked_fill(mask.unsqueeze(-1) == 0, float("-inf"))
    return masked.max(dim=1).values


def cls_pool(tokens: Tensor, mask: Tensor) -> Tensor:
    """The vector of the first real token ([CLS] / <s>), wherever padding puts it."""
    # tokens: (B, T, H); mask: (B, T) -> (B, H). argmax finds the first 1, so left padding works too.
    first = mask.to(torch.int64).argmax(dim=1)
    return tokens[torch.arange(tokens.shape[0], device=tokens.device), first]


def mean_sqrt_len_pool(tokens: Tensor, mask: Tensor, divisor: Tensor | None = None) -> Tensor:
    """Sum of the non-padding token vectors over the square root of their count (or of `divisor`)."""
    # tokens: (B, T, H); mask: (B, T) -> (B, H)
    weights = mask.unsqueeze(-1).to(tokens.dtype)
    counts = weights.sum(dim=1) if divisor is None else divisor.unsqueeze(-1).to(tokens.dtype)
    return (tokens * weights).sum(dim=1) / counts.clamp(min=1e-9).sqrt()


def weightedmean_pool(tokens: Tensor, mask: Tensor, start: Tensor, divisor: Tensor | None = None) -> Tensor:
    """Mean with token i of the real tokens weighted i (1-based, counted from `start`, the first real token).

    Over `divisor` instead of the position weights' sum where one is given (WordWeights' weight sums).
    """
    # tokens: (B, T, H); mask: (B, T); start: (B,) -> (B, H). `start` comes from the mask before any
    # prompt was taken out, so a prompt keeps its positions, as in sentence-transformers.
    positions = torch.arange(1, tokens.shape[1] + 1, device=tokens.device, dtype=tokens.dtype)
    weights = (mask.to(tokens.dtype) * (positions.unsqueeze(0) - start.unsqueeze(1).to(tokens.dtype))).unsqueeze(-1)
    return divided((tokens * weights).sum(dim=1), weights.sum(dim=1), divisor)


def lasttoken_pool(tokens: Tensor, mask: Tensor) -> Tensor:
    """The vector of the last real token, left or right padded (a row without one gives zeros)."""
    # tokens: (B, T, H); mask: (B, T) -> (B, H)
    found, from_end = mask.flip(1).max(dim=1)
    last = torch.where(found == 0, mask.shape[1] - 1, mask.shape[1] - 1 - from_end)
    rows = torch.arange(tokens.shape[0], device=tokens.device)
    return tokens[rows, last] * mask[rows, last].unsqueeze(-1).to(tokens.dtype)


# The means a WordWeights module's `token_weights_sum` divides instead of their counts (as the reference's do).
WEIGHTED_MEANS = ("mean", "mean_sqrt_len_tokens", "weightedmean")


# weightedmean also takes each row's first real token (Pooling.forward passes it).
POOLING_FUNCTIONS: dict[str, Callable[..., Tensor]] = {
    "mean": mean_pool, "max": max_pool, "cls": cls_pool, "mean_sqrt_len_tokens": mean_sqrt_len_pool,
    "weightedmean": weightedmean_pool, "lasttoken": lasttoken_pool,
}  # fmt: skip

# sentence-transformers' legacy config keys (read by every version), in the order its forward
# concatenates modes given as flags.
_LEGACY_KEYS = {
    "cls": "pooling_mode_cls_token",
    "max": "pooling_mode_max_tokens",
    "mean": "pooling_mode_mean_tokens",
    "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
    "weightedmean": "pooling_mode_weightedmean_tokens",
    "lasttoken": "pooling_mode_lasttoken",
}


class Pooling(Module):
    """Pools `token_embeddings` into `sentence_embedding`; several modes are concatenated."""

    module_type = "sentence_transformers.models.Pooling"

    def __init__(self, embedding_dimension: int, mode: str | list[str] = "mean", include_prompt: bool = True) -> None:
        super().__init__()
        # False: a prompt's tokens (given as features["prompt_length"]) are left out of the pooled vector.
        self.include_prompt = include_prompt
        modes = [mode] if isinstance(mode, str) else list(mode)
        unknown = [m for m in modes if m not in POOLING_FUNCTIONS]
        if unknown or not modes:
            raise ValueError(f"unknown pooling mode {unknown or modes}; known: {', '.join(POOLING_FUNCTIONS)}")
        self.embedding_dimension = embedding_dimension
        self.modes = modes

    @property
    def output_dimension(self) -> int:
        """Size of the sentence vector."""
        return self.embedding_dimension * len(self.modes)

    def forward(self, features: Features) -> Features:
        """Add `sentence_embedding` (B, output_dimension)."""
        tokens, mask = features["token_embeddings"], features["attention_mask"]
        start = mask.to(torch.int32).argmax(dim=1)  # first real token of each row, before the prompt is taken out
        if not self.include_prompt and "prompt_length" in features:
            mask = without_prompt(mask, features["prompt_length"])
        divisor = features.get("token_weights_sum")  # where a WordWeights module ran: the means' divisor
        pooled = [self._pool(m, tokens, mask, start, divisor) for m in self.modes]
        features["sentence_embedding"] = pooled[0] if len(pooled) == 1 else torch.cat(pooled, dim=-1)
        return features

    @staticmethod
    def _pool(mode: str, tokens: Tensor, mask: Tensor, start: Tensor, divisor: Tensor | None) -> Tensor:
        """One mode's pooled vectors; the means over `divisor` where it is given."""
        if mode == "weightedmean":
            return weightedmean_pool(tokens, mask, start, divisor)
        if mode in WEIGHTED_MEANS:
            return POOLING_FUNCTIONS[mode](tokens, mask, divisor)
        return POOLING_FUNCTIONS[mode](tokens, mask)

    def get_config(self) -> dict[str, Any]:
        """The legacy sentence-transformers layout, which old and new versions both read."""
        config: dict[str, Any] = {"word_embedding_dimension": self.embedding_dimension}
        for mode, key in _LEGACY_KEYS.items():
            config[key] = mode in self.modes
        if [m for m in _LEGACY_KEYS if m in self.modes] != self.modes:
            # Flags carry no order: sentence-transformers 6 reads this key first and keeps ours.
            config["pooling_mode"] = list(self.modes)
        config["include_prompt"] = self.include_prompt
        return config

    @classmethod
    def load(cls, path: Path) -> Self:
        """Read either the legacy (`pooling_mode_*` flags) or the 6.x (`pooling_mode`) config."""
        config = cls.read_config(path)
        dim = config.get("embedding_dimension", config.get("word_embedding_dimension"))
        if not isinstance(dim, int):
            raise ModelFormatError(f"{path / cls.config_file}: missing embedding dimension")
        modes = config.get("pooling_mode")
        if modes is None:
            modes = [m for m, key in _LEGACY_KEYS.items() if config.get(key)]
            extra = [
                k for k, v in config.items() if k.startswith("pooling_mode_") and v and k not in _LEGACY_KEYS.values()
            ]
            if extra:
                raise ModelFormatError(f"{path / cls.config_file}: unsupported pooling {extra}")
        if isinstance(modes, str):
            modes = [modes]
        try:
            return cls(dim, modes or "mean", include_prompt=bool(config.get("include_prompt", True)))
        except ValueError as e:
            raise ModelFormatError(f"{path / cls.config_file}: {e}") from None
