"""A PCA rotation appended to a model, so that its leading dimensions carry the most of its vectors' energy.

Truncating a vector to its first k dimensions (Matryoshka-style, `truncate_dim`, `--dims`) keeps
whatever those k coordinates happen to hold. An orthogonal rotation onto the principal directions
of the model's own vectors (fitted on a sample of the user's texts) puts the most energy first, so
truncation loses less, and it changes nothing at full size: a rotation keeps every dot product and
every norm. The rotation is a bias-free identity-activation `Dense` module at the end of the chain,
which sentence-transformers loads as its own Dense.

The directions are those of the uncentred second moment (the SVD of the raw vectors): a rotation
about the origin, so no bias is needed and cosine similarity at full size is exactly preserved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from sbert.dense.model import SentenceEncoder
from sbert.errors import SbertError
from sbert.modules.dense import IDENTITY, Dense


@dataclass(frozen=True)
class RotationReport:
    """How much of the vectors' energy the first k dimensions held before and after the rotation."""

    texts: int
    energy_before: dict[int, float]  # k -> share of the squared norm in the first k coordinates
    energy_after: dict[int, float]


def principal_rotation(vectors: np.ndarray) -> np.ndarray:
    """The (d, d) orthogonal matrix whose rows are the principal directions of `vectors`, most energy first."""
    if vectors.ndim != 2 or len(vectors) < vectors.shape[1]:
        raise SbertError(f"a rotation of {vectors.shape[-1]} dimensions needs at least as many texts, "
                         f"got {len(vectors)}")  # fmt: skip
    _, _, vt = np.linalg.svd(vectors.astype(np.float64), full_matrices=False)
    # Fix each direction's sign (largest coordinate positive) so the same texts always give the same matrix.
    signs = np.sign(vt[np.arange(len(vt)), np.abs(vt).argmax(axis=1)])
    return (vt * signs[:, None]).astype(np.float32)


def energy_share(vectors: np.ndarray, ks: Sequence[int]) -> dict[int, float]:
    """Share of the total squared norm that the first k coordinates hold, for each k."""
    squared = (vectors.astype(np.float64) ** 2).sum(axis=0)
    total = squared.sum()
    return {k: float(squared[:k].sum() / total) for k in ks}


def rotate(
    model: SentenceEncoder, texts: Sequence[str], batch_size: int = 64, ks: Sequence[int] = (32, 64, 128, 256)
) -> tuple[SentenceEncoder, RotationReport]:
    """`model` with a PCA rotation fitted on `texts` appended; and the energy its first k dimensions hold."""
    if model.router is not None:
        raise SbertError("a model that starts with a Router has one chain per route: rotate each route's model")
    vectors = model.encode(list(texts), batch_size=batch_size, show_progress=False)
    rotation = principal_rotation(vectors)
    dim = rotation.shape[0]
    dense = Dense(dim, dim, bias=False, activation_function=IDENTITY)
    with torch.no_grad():
        dense.linear.weight.copy_(torch.from_numpy(rotation))
    rotated = SentenceEncoder([*model, dense], device=model.device)
    rotated.settings = replace(model.settings)  # its own copy: prompts and truncate_dim as the model had them
    kept = [k for k in ks if k < dim]
    report = RotationReport(len(vectors), energy_share(vectors, kept), energy_share(vectors @ rotation.T, kept))
    return rotated, report
