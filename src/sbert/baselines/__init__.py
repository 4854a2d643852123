"""Baselines the paper compares against: average GloVe, average BERT tokens, BERT [CLS] (Table 1)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sbert.evaluation.common import Embedder
    from sbert.reranker.model import CrossEncoder

# `--model` prefixes that name a baseline instead of a trained model.
BASELINES = ("glove", "glove:PATH", "avg:ENCODER", "cls:ENCODER", "cross:DIR")


def load_baseline(spec: str, device: str | None = None) -> Embedder | CrossEncoder | None:
    """The baseline a `--model` value names, or None when it names an ordinary model."""
    kind, sep, target = spec.partition(":")
    if spec == "glove":
        from sbert.baselines.glove import GloveEncoder

        return GloveEncoder.from_package()
    if not sep or kind not in {"glove", "avg", "cls", "cross"}:
        return None
    if kind == "cross":
        from sbert.reranker.model import CrossEncoder

        return CrossEncoder.load(Path(target).expanduser(), device)
    if kind == "glove":
        from sbert.baselines.glove import GloveEncoder

        return GloveEncoder.from_text(Path(target).expanduser())
    from sbert.dense.model import SentenceEncoder

    # An untrained head on a plain encoder: mean of its token outputs, or its first ([CLS]) token.
    return SentenceEncoder.from_transformer(target, "mean" if kind == "avg" else "cls", device=device)
