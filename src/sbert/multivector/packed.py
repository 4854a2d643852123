"""Multi-vector encoding on packed batches (the CUDA path): no padding token in the encoder or the heads.

Texts are laid end to end and the encoder runs with varlen attention (backends/packing.py,
varlen.py), as the dense and SPLADE CUDA engines do; the token heads (Dense, Normalize) then run on
the packed (N, H) rows directly, and the scored tokens of each text come out already without
padding, which is the output's shape anyway. Batches are cut by real tokens (`packed_batches`).

Queries whose expansion tokens are scored but not attended cannot run packed (every packed token
is attended); they stay on the padded engine, as does any model the packed path cannot take. It
runs on the CPU as well (the nested-SDPA kernel), which is how its logic is tested.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from sbert.backends.base import cast_copy
from sbert.backends.packed_chain import packed_token_embeddings, position_numbering, varlen_attention
from sbert.backends.packing import pack
from sbert.modules import Module, Transformer
from sbert.multivector.tokens import TokenRules

PACKED_TOKENS = 16_384  # real tokens per packed batch: the encoder's activations set it, as for SPLADE
TOKENS = "token_embeddings"


class PackedMultiVector:
    """A device copy of the chain with its encoder switched to varlen attention."""

    def __init__(self, modules: Sequence[Module], rules: TokenRules, device: torch.device, dtype: torch.dtype) -> None:
        transformer = modules[0]
        assert isinstance(transformer, Transformer)
        attention = varlen_attention(transformer, device, dtype)
        # a copy: the user's own model keeps its attention implementation
        self.modules = cast_copy(modules, device, dtype, force=True)
        encoder = self.modules[0]
        assert isinstance(encoder, Transformer)
        encoder.auto_model.set_attn_implementation(attention)
        self.encoder, self.rules, self.device = encoder, rules, device
        self.positions = position_numbering(transformer)

    def packable(self, task: str | None) -> bool:
        """Whether `task`'s rows can run here (see TokenRules.packable)."""
        return self.rules.packable(self.encoder, task)

    @torch.inference_mode()
    def embed_batch(self, rows: Sequence[Sequence[int]], task: str | None) -> list[np.ndarray]:
        """float32 (n_scored_i, dim) per row of token ids: the padded engine's matrices, padding-free."""
        if not rows:
            return []
        runs, seen = zip(*(self.rules.packed_row(r, task) for r in rows), strict=True)
        batch = pack(runs, self.positions, pin=self.device.type == "cuda").to(self.device, non_blocking=True)
        features = {TOKENS: packed_token_embeddings(self.encoder, batch)}  # (N, H)
        for module in self.modules[1:]:  # Dense and Normalize act on the last axis: packed rows as they are
            features = module(features)
        seen_ids = torch.tensor([i for row in seen for i in row], dtype=torch.long)
        scored = self.rules.keep_scored(seen_ids, torch.ones_like(seen_ids, dtype=torch.bool), task)
        flat = features[TOKENS].float()[scored.to(self.device)].cpu().numpy()
        owners = np.repeat(np.arange(len(runs)), [len(r) for r in runs])
        counts = np.bincount(owners[scored.numpy()], minlength=len(runs))
        return np.split(flat, np.cumsum(counts)[:-1])
