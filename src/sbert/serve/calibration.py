"""The int8/uint8 ranges behind `encoding_format` and Cohere's `embedding_types`: fixed once at start-up.

Codes must not depend on the batch a text arrives in, so every request quantizes with the same
(2, dim) min/max ranges: `--calibration RANGES.npy` (the user's own), else an int8 index's
ranges.npy, else ranges fitted at start-up on the sentences the package ships for int8 calibration
(246 texts: words, queries, code, long sentences), as Cohere answers int8 with no calibration step.
`/info` says which, and carries the ranges, so a client can dequantize.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sbert.errors import SbertError
from sbert.similarity import scaled_rows, similarity_of

# Each packaged range is widened by this share of its span on both sides. 246 texts do not reach every
# dimension's extremes, and a clipped code costs far more than a coarser step: with all-MiniLM-L6-v2, chosen
# on 3,992 SNLI dev sentences (worst cosine of the dequantized int8 row to the float one: 0.9905 unwidened,
# 0.9946 at 0.1, 0.9981 at 0.25, 0.99991 at 0.5, 0.99986 at 0.75), then measured on the 2,552 STSb test
# sentences: mean 0.99992, worst 0.99991 (0.99898 and 0.98993 unwidened); benchmarks/serve/serve_int8_ranges.py.
PACKAGED_MARGIN = 0.5

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder
    from sbert.serve.settings import ServeSettings
    from sbert.static import StaticEncoder


@dataclass(frozen=True)
class Calibration:
    """The ranges every int8/uint8 request uses, and where they came from."""

    ranges: np.ndarray  # (2, dim): per-dimension min and max of the rows as the similarity compares them
    source: str  # a file's path, or "packaged (N texts)"

    def describe(self) -> dict[str, object]:
        """/info's record of it."""
        return {"source": self.source, "ranges": self.ranges.tolist()}


def server_calibration(settings: ServeSettings, model: SentenceEncoder | StaticEncoder) -> Calibration:
    """--calibration's file, else the int8 index's ranges.npy, else ranges fitted on the packaged texts."""
    from sbert.search.quantized_index import RANGES_FILE

    dim = model.embedding_dimension
    path = settings.calibration or (f"{settings.index}/{RANGES_FILE}" if settings.index else None)
    if path is not None and (settings.calibration is not None or os.path.isfile(path)):
        return Calibration(read_ranges(path, dim), path)
    return packaged_calibration(model, settings.backend, settings.precision)


def read_ranges(path: str, dim: int) -> np.ndarray:
    """A (2, dim) ranges file, checked; a one-line error naming the file otherwise."""
    try:
        ranges = np.load(path)
    except (OSError, ValueError) as e:
        raise SbertError(f"--calibration {path}: not a .npy array ({e})") from None
    if ranges.shape != (2, dim) or not np.isfinite(ranges).all():
        raise SbertError(f"--calibration {path}: expected finite (2, {dim}) min/max ranges, got {ranges.shape}")
    return ranges.astype(np.float32)


def packaged_calibration(model: SentenceEncoder | StaticEncoder, backend: str, precision: str) -> Calibration:
    """Ranges of the packaged calibration texts' vectors, as the server's own engine computes them.

    Documents and queries are both covered (each with its prompt, where the two differ), since either
    may be quantized; each range is widened by PACKAGED_MARGIN of its span.
    """
    from sbert.backends.calibration import packaged

    texts = packaged()
    by_prompt = {model.prompt_plan(task=task).text: task for task in ("query", "document")}  # one encode per prompt
    rows = [model.encode(texts, backend=backend, precision=precision, show_progress=False, task=task,
                         on_truncation="ignore")
            for task in by_prompt.values()]  # fmt: skip
    vectors = scaled_rows(np.concatenate(rows), similarity_of(model))
    low, high = vectors.min(axis=0), vectors.max(axis=0)
    margin = PACKAGED_MARGIN * (high - low)
    ranges = np.stack([low - margin, high + margin]).astype(np.float32)
    return Calibration(ranges, f"packaged ({len(texts)} texts)")
