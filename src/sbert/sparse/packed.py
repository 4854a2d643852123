"""SPLADE on packed batches (the CUDA path): no padding token in the backbone, the head on real tokens only.

The padded engine (sparse/engine.py) already keeps padding out of the vocabulary head; here the
backbone runs padding-free too, as the dense CUDA engine does: sentences laid end to end with
varlen attention (backends/packing.py, varlen.py), then the head a chunk of tokens at a time, each
chunk max- or sum-pooled into its sentence's row at once. Memory is B x V + chunk x V and the
backbone's work is the real tokens', whatever the lengths. Batches are cut by real tokens
(`packed_batches`), not rows x longest.

It runs on the CPU as well (the nested-SDPA kernel), which is how its logic is tested; a model the
packed path cannot take (an unknown head or position scheme, no kernel) stays on the padded engine.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import torch
from torch import Tensor

from sbert.backends.base import cast_copy
from sbert.backends.packed_chain import packed_hidden, position_numbering, varlen_attention
from sbert.backends.packing import pack, segment_ids
from sbert.sparse.engine import CHUNK_TOKENS
from sbert.sparse.mlm import MLMTransformer
from sbert.sparse.splade import SpladePooling, pool_rows_into, splade_weights

log = logging.getLogger(__name__)
PACKED_TOKENS = 16_384  # real tokens per packed batch: the backbone's activations, not the head's, set it


class PackedSplade:
    """A device copy of an MLM switched to varlen attention, and SPLADE pooling over packed batches."""

    def __init__(self, mlm: MLMTransformer, pooling: SpladePooling, device: torch.device, dtype: torch.dtype) -> None:
        unknown_head = f"the head of {type(mlm.auto_model).__name__} is not known to the engine"
        # the encoder's own blockers are varlen_attention's to check
        attention = varlen_attention(mlm, device, dtype, blocker=unknown_head if mlm.split() is None else None)
        (copy,) = cast_copy([mlm], device, dtype, force=True)  # never switch the user's own model's attention
        assert isinstance(copy, MLMTransformer)
        copy.auto_model.set_attn_implementation(attention)
        self.mlm, self.pooling, self.device, self.dtype = copy, pooling, device, dtype
        self.positions = position_numbering(mlm)

    @torch.inference_mode()
    def embed(self, rows: Sequence[Sequence[int]], chunk: int = CHUNK_TOKENS) -> Tensor:
        """SPLADE vectors (B, V) of token-id rows, on the device in the working dtype."""
        split = self.mlm.split()
        assert split is not None
        backbone, head = split
        batch = pack(rows, self.positions, pin=self.device.type == "cuda").to(self.device, non_blocking=True)
        tokens = packed_hidden(backbone, self.mlm.model_inputs, batch)  # (N, H): no padding anywhere
        owners = segment_ids(batch.cu_seqlens, tokens.shape[0])
        out = torch.zeros(batch.rows, self.mlm.vocab_size, dtype=tokens.dtype, device=tokens.device)
        for start in range(0, tokens.shape[0], chunk):
            weights = splade_weights(head(tokens[start : start + chunk]), self.pooling.activation_function)
            pool_rows_into(out, weights, owners[start : start + chunk], self.pooling.pooling_strategy)
        return out
