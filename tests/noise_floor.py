"""How far half-precision rounding alone moves a sentence vector when its batch changes: the yardstick
for "a packed row does not depend on its neighbours", measured in the same run instead of a constant."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from sbert import SentenceEncoder
from sbert.backends.base import Backend, cast_copy, embed_padded
from sbert.encoding.engine import embed_rows


def neighbour_gap(engine: Backend, ids: Sequence[Sequence[int]], dim: int, n: int) -> float:
    """Largest change of the first `n` vectors between one run over all `ids` and a run of each alone."""
    together = embed_rows(engine, ids, dim)[:n]
    alone = np.stack([embed_rows(engine, [ids[i]], dim)[0] for i in range(n)])
    return float(np.abs(together - alone).max())


def half_noise_floor(
    model: SentenceEncoder, ids: Sequence[Sequence[int]], device: torch.device, dtype: torch.dtype, n: int
) -> float:
    """The rounding noise of `dtype` on the first `n` rows: the larger of two measurements.

    - the same sentences in two batch compositions (one padded batch, then each alone) on the
      padded path, where the attention mask keeps sentences apart exactly, so any gap is rounding;
    - each sentence alone in `dtype` against fp32.
    A row that attends to its neighbours moves far more (about 0.1 for MiniLM, against a floor
    of about 0.002 in bf16 on the CPU).
    """
    modules = cast_copy(model.chain(), device, dtype)
    pad = model.transformer.pad
    with torch.inference_mode():
        batch = embed_padded(modules, pad(ids[:n]), device).float().cpu().numpy()
        alone = np.stack([embed_padded(modules, pad([ids[i]]), device).float().cpu().numpy()[0] for i in range(n)])
        exact = embed_padded(cast_copy(model.chain(), device, torch.float32), pad(ids[:n]), device).cpu().numpy()
    return max(float(np.abs(batch - alone).max()), float(np.abs(alone - exact).max()))
