"""CSR: Contrastive Sparse Representation, a top-k sparse autoencoder on a dense model's sentence vector.

    z = relu(top_k(W (LN(x) - b_pre) + b_lat))        (Wen et al. 2025, "Beyond Matryoshka", arXiv:2503.01776)

x is the dense vector, LN an optional per-vector standardisation; only the k largest latents of the
hidden_dim stay, so the code has at most k active dimensions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

import torch
from safetensors.torch import save_file
from torch import Tensor, nn

from sbert.errors import ModelFormatError
from sbert.formats.layout import write_json
from sbert.modules.base import Features, Module, load_weights

_EPS = 1e-5


def standardize(x: Tensor) -> Tensor:
    """(x - mean) / (std + eps) per row, the unbiased std as sentence-transformers computes it."""
    centered = x - x.mean(dim=-1, keepdim=True)
    return centered / (centered.std(dim=-1, keepdim=True) + _EPS)


def top_k_relu(latents: Tensor, k: int) -> Tensor:
    """The relu of each row's k largest values, zeros elsewhere: (B, H) -> (B, H)."""
    top = latents.topk(min(k, latents.shape[-1]), dim=-1)
    return torch.zeros_like(latents).scatter_(-1, top.indices, top.values).relu_()


class SparseAutoEncoder(Module):
    """Maps `sentence_embedding` (B, input_dim) to a sparse code (B, hidden_dim) with at most k active dimensions."""

    module_type = "sentence_transformers.sparse_encoder.modules.SparseAutoEncoder"
    stats_last_nonzero: Tensor  # batches since each latent last fired (a buffer: saved, never trained)

    def __init__(self, input_dim: int, hidden_dim: int = 512, k: int = 8, k_aux: int = 512, normalize: bool = False,
                 dead_threshold: int = 30, **_ignored: Any) -> None:  # fmt: skip
        super().__init__()
        if not 1 <= k <= hidden_dim:
            raise ModelFormatError(f"SparseAutoEncoder: k={k} must be in [1, hidden_dim={hidden_dim}]")
        self.input_dim, self.hidden_dim, self.k, self.k_aux = input_dim, hidden_dim, k, k_aux
        self.normalize, self.dead_threshold = normalize, dead_threshold
        self.pre_bias = nn.Parameter(torch.zeros(input_dim))
        self.encoder = nn.Linear(input_dim, hidden_dim, bias=False)
        self.latent_bias = nn.Parameter(torch.zeros(hidden_dim))
        self.register_buffer("stats_last_nonzero", torch.zeros(hidden_dim, dtype=torch.long))

    def prepare(self, x: Tensor) -> Tensor:
        """The dense vectors as the encoder reads them (standardised when `normalize`): the reconstruction target."""
        return standardize(x) if self.normalize else x

    def latents(self, prepared: Tensor) -> Tensor:
        """Every latent before top-k: W (x - b_pre) + b_lat, (B, input_dim) -> (B, hidden_dim)."""
        return nn.functional.linear(prepared - self.pre_bias, self.encoder.weight, self.latent_bias)

    def codes(self, x: Tensor, k: int | None = None) -> Tensor:
        """The sparse codes of dense vectors x (B, input_dim), k active at most (default: the module's)."""
        return top_k_relu(self.latents(self.prepare(x)), k or self.k)

    def forward(self, features: Features) -> Features:
        """Replace `sentence_embedding` by its sparse code (in training, with the reconstructions CSRLoss reads)."""
        if self.training and torch.is_grad_enabled():
            return self._training_forward(features)
        features["sentence_embedding"] = self.codes(features["sentence_embedding"])
        return features

    def _training_forward(self, features: Features) -> Features:
        """6.2's training outputs: the k, 4k and dead-latent reconstructions of the dense vector, under its keys."""
        x = features["sentence_embedding"]
        mu = x.mean(dim=-1, keepdim=True) if self.normalize else None
        std = (x - mu).std(dim=-1, keepdim=True) if mu is not None else None
        pre = self.latents(self.prepare(x))
        z_k = self._fire(pre, self.k)
        # The dead latents' aux code is taken after the k code has aged them, as 6.2 takes it.
        dead = (self.stats_last_nonzero > self.dead_threshold).to(pre.dtype)
        z_aux = top_k_relu(pre * dead, self.k_aux) if self.k_aux else None
        z_4k = self._fire(pre, 4 * self.k)

        def restore(y: Tensor) -> Tensor:  # back to the dense vector's scale (6.2 multiplies by std, without eps)
            return y * std + mu if std is not None and mu is not None else y

        decode = lambda z: z @ self.encoder.weight + self.pre_bias  # noqa: E731  (tied weights: Wᵀ z + b_pre)
        recons_k = restore(decode(z_k))
        recons_aux = decode(z_aux) if z_aux is not None else None
        bias = self.pre_bias if std is None else self.pre_bias * std
        if recons_aux is not None and std is not None:
            recons_aux = recons_aux * std
        features.update({"sentence_embedding_backbone": x, "sentence_embedding_encoded": pre,
                         "sentence_embedding_encoded_4k": z_4k, "auxiliary_embedding": z_aux,
                         "decoded_embedding_k": recons_k, "decoded_embedding_4k": restore(decode(z_4k)),
                         "decoded_embedding_aux": recons_aux, "decoded_embedding_k_pre_bias": recons_k - bias,
                         "sentence_embedding": z_k})  # fmt: skip
        return features

    def _fire(self, pre: Tensor, k: int) -> Tensor:
        """The top-k code, ageing every latent by one forward and resetting those that fired (above 1e-5)."""
        top = pre.topk(min(k, pre.shape[-1]), dim=-1)
        with torch.no_grad():
            fired = torch.zeros_like(self.stats_last_nonzero)
            fired.scatter_add_(0, top.indices.reshape(-1), (top.values > _EPS).to(fired.dtype).reshape(-1))
            self.stats_last_nonzero.mul_(1 - fired.clamp(max=1)).add_(1)
        return torch.zeros_like(pre).scatter_(-1, top.indices, top.values).relu()

    def get_config(self) -> dict[str, Any]:
        """config.json, as sentence-transformers writes it."""
        return {"input_dim": self.input_dim, "hidden_dim": self.hidden_dim, "k": self.k, "k_aux": self.k_aux,
                "normalize": self.normalize, "dead_threshold": self.dead_threshold}  # fmt: skip

    def save(self, path: Path) -> None:
        """config.json and model.safetensors, the weight under the tied decoder's key only (its loader's key)."""
        path.mkdir(parents=True, exist_ok=True)
        write_json(path / self.config_file, self.get_config())
        weight = self.encoder.weight.detach().contiguous().cpu()
        state: dict[str, Tensor] = {"decoder.linear.weight": weight}  # its loader refuses an encoder.weight key
        for name, tensor in (*self.named_parameters(), *self.named_buffers()):
            if name != "encoder.weight":
                state[name] = tensor.detach().contiguous().cpu()
        save_file(state, str(path / "model.safetensors"))

    @classmethod
    def load(cls, path: Path) -> Self:
        """Read the folder `save` (or sentence-transformers) wrote: the encoder weight under either key."""
        module = cls(**cls.read_config(path))
        weights = load_weights(path)
        weight = weights.get("encoder.weight", weights.get("decoder.linear.weight"))
        if weight is None:
            raise ModelFormatError(f"{path}: SparseAutoEncoder weights lack encoder.weight")
        state = {k: v for k, v in weights.items() if k != "decoder.linear.weight"}  # the tied copy
        state["encoder.weight"] = weight
        try:
            module.load_state_dict(state)
        except RuntimeError as e:
            raise ModelFormatError(f"{path}: SparseAutoEncoder weights do not fit its config ({e})") from None
        return module
