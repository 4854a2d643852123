"""Adaptive layer loss and 2D Matryoshka (Li et al., 2024): an objective on the last layer and on earlier ones.

    loss = w_last * inner(last layer)
           + sum over the step's layers l of  w(l) / n * w_prior * inner(layer l)
                                             + w_kl * T * KL(softmax(last / T) || softmax(layer l / T))

Layer l's token vectors go through the rest of the chain (pooling, dense, normalize) as the last layer's
do, so the encoder cut after layer l still gives usable vectors. The computation is sentence-transformers
6.2's AdaptiveLayerLoss: the layers are the encoder's hidden states with the embedding layer's output as
layer 0 and the last layer never drawn; `n_layers_per_step` of them are drawn per step with Python's
(seeded) random, all of them when it is <= 0; the KL term takes every column's rows at once, the last
layer's distribution held fixed. The encoder runs once per column: every layer's loss reads the same pass.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.errors import SbertError
from sbert.losses.base import Loss
from sbert.losses.matryoshka import MatryoshkaLoss
from sbert.modules.transformer import Transformer

LayerWeighting = str | Callable[[int], float]
WEIGHTINGS = ("uniform", "log", "linear")


class AdaptiveLayerLoss(Loss):
    """`AdaptiveLayerLoss(model, loss, n_layers_per_step=1, ...)` as in sentence-transformers 6.2."""

    needs_model = True

    def __init__(
        self,
        model: nn.Module | None,
        loss: Loss,
        n_layers_per_step: int = 1,
        last_layer_weight: float = 1.0,
        prior_layers_weight: float = 1.0,
        kl_div_weight: float = 1.0,
        kl_temperature: float = 0.3,
        layer_weighting: LayerWeighting = "uniform",
    ) -> None:
        super().__init__()
        if not callable(layer_weighting) and layer_weighting not in WEIGHTINGS:
            raise ValueError(
                f'layer_weighting must be "uniform", "log", "linear", or a callable, but got {layer_weighting!r}.'
            )
        if not isinstance(loss, Loss) or loss.needs_model:
            # 6.2 warns and runs a gradient-cached loss on the last layer only; here such a loss is refused.
            raise SbertError(f"AdaptiveLayerLoss cannot wrap {type(loss).__name__}: it runs the encoder itself")
        self.name_model(model)
        self.loss = loss
        self.n_layers_per_step = n_layers_per_step
        self.last_layer_weight, self.prior_layers_weight = last_layer_weight, prior_layers_weight
        self.kl_div_weight, self.kl_temperature = kl_div_weight, kl_temperature
        self.layer_weighting = layer_weighting
        self.kinds = loss.kinds  # type: ignore[misc]
        self.in_batch_negatives = loss.in_batch_negatives  # type: ignore[misc]

    def get_layer_weight(self, layer_idx: int) -> float:
        """The weight of layer `layer_idx`'s loss: 1, 1 / (1 + ln(1 + l)), 1 / (1 + l), or the callable's."""
        if callable(self.layer_weighting):
            return float(self.layer_weighting(layer_idx))
        if self.layer_weighting == "log":
            return 1.0 / (1.0 + math.log(1 + layer_idx))
        if self.layer_weighting == "linear":
            return 1.0 / (1 + layer_idx)
        return 1.0

    def step_layers(self, layers: int) -> Sequence[int]:
        """The earlier layers (0 .. layers - 2) this step scores: all, or `n_layers_per_step` drawn at random."""
        earlier = range(layers - 1)
        if 0 < self.n_layers_per_step < layers - 1:
            return random.sample(earlier, self.n_layers_per_step)
        return earlier

    def forward_model(self, model: nn.Module, columns: list[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """The last layer's loss plus each drawn layer's, from one encoder pass per column."""
        first, rest = _split_chain(model)
        passes = [first.forward_all_layers(dict(features)) for features in columns]
        last = [_finish(rest, features, features["token_embeddings"]) for features, _ in passes]
        loss = self.loss.forward_features(last, labels) * self.last_layer_weight
        target = None
        if self.kl_temperature > 0:
            target = functional.softmax(_rows(last) / self.kl_temperature, dim=-1).detach()
        chosen = self.step_layers(len(passes[0][1]))
        for layer in chosen:
            outputs = [_finish(rest, features, hidden[layer]) for features, hidden in passes]
            weight = self.get_layer_weight(layer) / len(chosen) * self.prior_layers_weight
            loss = loss + self.loss.forward_features(outputs, labels) * weight
            if target is not None:
                drawn = functional.log_softmax(_rows(outputs) / self.kl_temperature, dim=-1)
                kl = functional.kl_div(drawn, target, reduction="batchmean")
                loss = loss + kl * self.kl_temperature * self.kl_div_weight
        return loss

    def check_model(self, modules: list[nn.Module]) -> None:
        """The chain must start with a transformer (its layers are what is scored); then the inner loss's check."""
        if not modules or not isinstance(modules[0], Transformer):
            raise SbertError(f"{type(self).__name__} needs a model whose first module is a transformer encoder")
        self.loss.check_model(modules)

    def save_head(self, path: Path) -> None:
        """The wrapped objective's head, if it has one."""
        self.loss.save_head(path)

    def get_config_dict(self) -> dict[str, Any]:
        """The settings as 6.2 lists them in a model card."""
        weighting = self.layer_weighting
        return {
            "loss": type(self.loss).__name__,
            "n_layers_per_step": self.n_layers_per_step,
            "last_layer_weight": self.last_layer_weight,
            "prior_layers_weight": self.prior_layers_weight,
            "kl_div_weight": self.kl_div_weight,
            "kl_temperature": self.kl_temperature,
            "layer_weighting": weighting if isinstance(weighting, str) else getattr(weighting, "__name__", "custom"),
        }


class Matryoshka2dLoss(AdaptiveLayerLoss):
    """2D Matryoshka: AdaptiveLayerLoss around MatryoshkaLoss(model, loss, dims), as in sentence-transformers 6.2."""

    def __init__(
        self,
        model: nn.Module | None,
        loss: Loss,
        matryoshka_dims: Sequence[int],
        matryoshka_weights: Sequence[float] | None = None,
        n_layers_per_step: int = 1,
        n_dims_per_step: int = 1,
        last_layer_weight: float = 1.0,
        prior_layers_weight: float = 1.0,
        kl_div_weight: float = 1.0,
        kl_temperature: float = 0.3,
        layer_weighting: LayerWeighting = "uniform",
    ) -> None:
        nested = MatryoshkaLoss(model, loss, matryoshka_dims, matryoshka_weights, n_dims_per_step=n_dims_per_step)
        super().__init__(model, nested, n_layers_per_step, last_layer_weight, prior_layers_weight, kl_div_weight,
                         kl_temperature, layer_weighting)  # fmt: skip

    def get_config_dict(self) -> dict[str, Any]:
        """The layer settings and the nested MatryoshkaLoss's."""
        nested = self.loss
        assert isinstance(nested, MatryoshkaLoss)
        dims = {"matryoshka_dims": list(nested.dims), "matryoshka_weights": list(nested.weights),
                "n_dims_per_step": nested.n_dims_per_step}  # fmt: skip
        return {**super().get_config_dict(), "loss": type(nested.inner).__name__, **dims}


def _split_chain(model: nn.Module) -> tuple[Transformer, list[nn.Module]]:
    chain: list[nn.Module] = list(model.children())  # the encoder's modules in order (a SentenceEncoder's chain)
    if not chain or not isinstance(chain[0], Transformer):
        raise SbertError("AdaptiveLayerLoss needs a model whose first module is a transformer encoder")
    return chain[0], chain[1:]


def _finish(rest: list[nn.Module], features: dict[str, Any], tokens: Tensor) -> dict[str, Any]:
    """The chain after the encoder run on `tokens` in place of the last layer's (a fresh dict each time)."""
    out = {k: v for k, v in features.items() if k != "sentence_embedding"}
    out["token_embeddings"] = tokens
    for module in rest:
        out = module(out)
    return out


def _rows(outputs: list[dict[str, Any]]) -> Tensor:
    return torch.cat([o["sentence_embedding"] for o in outputs], dim=0)
