"""CSR's training objective through the trainer: reconstruction of the dense vector plus a ranking loss on the codes.

    loss = ||x - x̂_k||² + ||x - x̂_4k||² / 8 + β NMSE(ê_aux, x - x̂_k + b) + γ L(z_k(anchor), z_k(positive), ...)

(Wen et al. 2025, "Beyond Matryoshka", arXiv:2503.01776), in sentence-transformers 6.2's form: the whole
model trains (the dense backbone too), the mean squared errors are per element, and the auxiliary term is
normalised by the batch's variance. The reconstructions come from the SparseAutoEncoder's own training
forward (sbert/sparse/csr.py); `sbert train-csr` is the other form, which freezes the backbone.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.errors import SbertError
from sbert.losses.base import Loss
from sbert.losses.sparse_parts import SparseMultipleNegativesRankingLoss
from sbert.losses.splade import sentence_vector_loss


def normalized_mse(reconstruction: Tensor, target: Tensor) -> Tensor:
    """MSE divided by the target's variance around its batch mean (plain MSE where that variance is 0)."""
    spread = functional.mse_loss(target.mean(dim=0, keepdim=True).expand_as(target), target)
    flat = (spread == 0) | (target == target[:1]).all()
    return functional.mse_loss(reconstruction, target) / torch.where(flat, torch.ones_like(spread), spread)


class CSRReconstructionLoss(nn.Module):
    """The reconstruction terms of CSRLoss (6.2 uses it inside CSRLoss only; so does sbert)."""

    def __init__(self, model: nn.Module | None = None, beta: float = 1.0) -> None:
        super().__init__()
        self.beta = beta

    def forward(self, *_: Any) -> Tensor:
        """Not a loss on its own, as in 6.2: CSRLoss computes it from the autoencoder's outputs."""
        raise NotImplementedError("CSRReconstructionLoss is used within CSRLoss, not on its own")

    def compute_loss_from_embeddings(self, outputs: list[dict[str, Any]]) -> dict[str, Tensor]:
        """The k, 4k (/8) and auxiliary (x beta) terms, each averaged over the text columns."""
        k, k4, aux = [], [], []
        for features in outputs:
            x = features["sentence_embedding_backbone"]
            k.append(functional.mse_loss(x, features["decoded_embedding_k"]))
            k4.append(functional.mse_loss(x, features["decoded_embedding_4k"]))
            recons_aux = features["decoded_embedding_aux"]
            residual = x - features["decoded_embedding_k_pre_bias"].detach()
            aux.append(normalized_mse(recons_aux, residual) if recons_aux is not None else torch.zeros_like(k[-1]))
        mean = lambda terms: torch.stack(terms).mean()  # noqa: E731
        return {"reconstruction_loss_k": mean(k), "reconstruction_loss_4k": mean(k4) / 8.0,
                "reconstruction_loss_aux": self.beta * mean(aux)}  # fmt: skip


class CSRLoss(Loss):
    """`CSRLoss(model, loss=None, beta=0.1, gamma=1.0)`: reconstruction plus `gamma` x the ranking loss (MNRL)."""

    kinds = ("pair", "triplet")
    needs_features = True
    separate_columns = True  # the autoencoder ages its latents once per forward: one per column, as in 6.2

    def __init__(self, model: nn.Module | None = None, loss: nn.Module | None = None, beta: float = 0.1,
                 gamma: float = 1.0) -> None:  # fmt: skip
        super().__init__()
        self.name_model(model)
        self.beta, self.gamma = beta, gamma
        self.reconstruction_loss = CSRReconstructionLoss(model, beta)
        self.loss = (
            sentence_vector_loss(loss, "CSRLoss") if loss is not None else SparseMultipleNegativesRankingLoss(model)
        )
        self.kinds, self.in_batch_negatives = self.loss.kinds, self.loss.in_batch_negatives  # type: ignore[misc,assignment]

    def forward_features(self, features: list[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """The sum of the reconstruction terms and the weighted main loss on the sparse codes."""
        if "decoded_embedding_k" not in features[0]:
            raise SbertError("CSRLoss reads the SparseAutoEncoder's training outputs: train a CSR model with it")
        terms = self.reconstruction_loss.compute_loss_from_embeddings(features)
        main = self.loss([f["sentence_embedding"] for f in features], labels)
        return torch.stack(list(terms.values())).sum() + self.gamma * main

    def check_model(self, modules: list[nn.Module]) -> None:
        """CSR trains a model whose chain ends in a SparseAutoEncoder."""
        if not modules or type(modules[-1]).__name__ != "SparseAutoEncoder":
            names = ", ".join(type(m).__name__ for m in modules)
            raise SbertError(f"CSRLoss trains a CSR model (ending in a SparseAutoEncoder), not {names}")

    def get_config_dict(self) -> dict[str, Any]:
        """6.2's card entry: the weights and the main loss's name."""
        return {"beta": self.beta, "gamma": self.gamma, "loss": type(self.loss).__name__}
