"""Training CSR: a top-k sparse autoencoder on a frozen dense model's vectors (Wen et al. 2025, arXiv:2503.01776).

    L = ||x - x̂_k||² + ||x - x̂_4k||² / 8 + β ||e - ê_aux||² + γ InfoNCE(z_k(anchor), z_k(positive))

x̂_k decodes the k-sparse code with the tied weights (Wᵀ z + b_pre); e = x - x̂_k is the residual the
k_aux largest *dead* latents (silent for more than `dead_threshold` batches) must explain, which
brings them back; the contrastive term (cosine, scale 20, in-batch negatives) makes codes of
paraphrases agree. The dense model stays frozen: its vectors are computed once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor
from torch.nn import functional

from sbert.errors import SbertError
from sbert.sparse.csr import SparseAutoEncoder, top_k_relu

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder
    from sbert.sparse.model import SparseEncoder


@dataclass(frozen=True)
class CsrSettings:
    """The autoencoder's shape and its training schedule."""

    hidden_dim: int = 1536
    k: int = 32
    k_aux: int = 512
    normalize: bool = False
    epochs: int = 20
    batch_size: int = 256
    lr: float = 4e-4
    beta: float = 1 / 32  # weight of the dead-latent auxiliary loss
    gamma: float = 1.0  # weight of the contrastive loss
    scale: float = 20.0  # InfoNCE's inverse temperature on cosine similarities
    dead_threshold: int = 30
    seed: int = 0


def csr_loss(sae: SparseAutoEncoder, x: Tensor, anchors: Tensor, positives: Tensor, s: CsrSettings) -> Tensor:
    """The CSR objective for a batch of dense vectors `x` (reconstruction) and dense pairs (contrastive)."""
    target = sae.prepare(x)
    pre = sae.latents(target)  # (B, H)
    z_k, z_4k = top_k_relu(pre, sae.k), top_k_relu(pre, 4 * sae.k)
    decode = lambda z: z @ sae.encoder.weight + sae.pre_bias  # noqa: E731  (tied weights: Wᵀ z + b_pre)
    recon_k = decode(z_k)
    loss = (recon_k - target).pow(2).sum(-1).mean() + (decode(z_4k) - target).pow(2).sum(-1).mean() / 8
    with torch.no_grad():  # a latent silent in this batch ages by one; one that fired starts again at 0
        fired = (z_k > 0).any(dim=0)
        sae.stats_last_nonzero.add_(1).masked_fill_(fired, 0)
    dead = sae.stats_last_nonzero > sae.dead_threshold
    if dead.any() and sae.k_aux:
        z_aux = top_k_relu(pre.masked_fill(~dead, float("-inf")).nan_to_num(neginf=-1e9), sae.k_aux)
        residual = (target - recon_k).detach()
        loss = loss + s.beta * (z_aux @ sae.encoder.weight - residual).pow(2).sum(-1).mean()
    a, p = (sae.codes(v) for v in (anchors, positives))
    logits = s.scale * functional.normalize(a, dim=-1) @ functional.normalize(p, dim=-1).T
    return loss + s.gamma * functional.cross_entropy(logits, torch.arange(len(a), device=a.device))


def train_csr(dense: SentenceEncoder, texts: list[str], pairs: list[tuple[str, str]], s: CsrSettings) -> SparseEncoder:
    """A CSR SparseEncoder: `dense` (frozen) plus an autoencoder trained on its vectors of `texts` and `pairs`."""
    from sbert.sparse.model import SparseEncoder

    if not texts or not pairs:
        raise SbertError("train_csr needs texts (reconstruction) and pairs (contrastive), got an empty set")
    torch.manual_seed(s.seed)
    vectors = torch.from_numpy(dense.encode(texts, show_progress=False))
    anchors = torch.from_numpy(dense.encode([a for a, _ in pairs], show_progress=False))
    positives = torch.from_numpy(dense.encode([p for _, p in pairs], show_progress=False))
    sae = SparseAutoEncoder(vectors.shape[1], s.hidden_dim, s.k, s.k_aux, s.normalize, s.dead_threshold)
    with torch.no_grad():  # start the bias at the data's mean, as sparse autoencoders usually do
        sae.pre_bias.copy_(sae.prepare(vectors).mean(0))
    optimizer = torch.optim.Adam(sae.parameters(), lr=s.lr)
    rng = np.random.default_rng(s.seed)
    steps = max(len(vectors), len(pairs)) // s.batch_size + 1
    sae.train()
    for _ in range(s.epochs):
        order, pair_order = rng.permutation(len(vectors)), rng.permutation(len(pairs))
        for step in range(steps):
            batch = order[(step * s.batch_size) % len(order) :][: s.batch_size]
            pair = pair_order[(step * s.batch_size) % len(pair_order) :][: s.batch_size]
            loss = csr_loss(sae, vectors[batch], anchors[pair], positives[pair], s)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    sae.eval()
    model = SparseEncoder(dense=dense, sae=sae, device=dense.device)
    model.settings = dense.settings
    return model
