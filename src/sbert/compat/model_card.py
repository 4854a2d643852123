"""Model card data: sentence-transformers 6.2's `*ModelCardData` classes, and the README.md a drop-in save writes.

`SentenceTransformer(path, model_card_data=SentenceTransformerModelCardData(language="en", license=...,
model_name=...))` is how 6.2's Training Overview starts. The data rides on the model; `save` renders it
into README.md: YAML front matter a model hub reads (language, license, tags, datasets, pipeline), then
a title, what the model is, its evaluators' last metrics and a usage snippet. A training run's own card
(the engine's table of stages), when one is written into the same save, keeps its body and gains the
front matter. Nothing is fetched: dataset and base-model ids are written as given.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from sbert.version import __version__

CARD_FILE = "README.md"


@dataclass
class ModelCardData:
    """What a model card says beyond the weights: the fields of 6.2's BaseModelCardData, same order."""

    language: str | list[str] | None = field(default_factory=list)
    license: str | None = None
    model_name: str | None = None
    model_id: str | None = None
    train_datasets: list[dict[str, str]] = field(default_factory=list)
    eval_datasets: list[dict[str, str]] = field(default_factory=list)
    task_name: str | None = None
    tags: list[str] | None = field(default_factory=list)
    local_files_only: bool = False
    generate_widget_examples: bool = True

    pipeline_tag: ClassVar[str | None] = None
    kind_tags: ClassVar[tuple[str, ...]] = ()
    model_words: ClassVar[str] = "model"

    def __post_init__(self) -> None:
        if isinstance(self.language, str):
            self.language = [self.language]
        self.tags = [*self.kind_tags, *(t for t in self.tags or [] if t not in self.kind_tags)]

    def front_matter(self, train_datasets: list[str] | None = None) -> str:
        """The card's YAML header (each value JSON-quoted, which YAML reads as the same string)."""
        datasets = [*(d.get("id") or d.get("name", "") for d in self.train_datasets), *(train_datasets or [])]
        fields: dict[str, Any] = {
            "language": self.language or None,
            "license": self.license,
            "library_name": "sentence-transformers",  # the folder loads there as it does in sbert
            "pipeline_tag": self.pipeline_tag,
            "tags": [*(self.tags or []), "sbert"],
            "datasets": [d for d in datasets if d] or None,
        }
        lines = ["---"]
        for key, value in fields.items():
            if value is None:
                continue
            if isinstance(value, list):
                lines += [f"{key}:", *(f"- {json.dumps(v)}" for v in value)]
            else:
                lines.append(f"{key}: {json.dumps(value)}")
        return "\n".join([*lines, "---", ""])


@dataclass
class SentenceTransformerModelCardData(ModelCardData):
    """Card data of a dense embedding model (6.2's task_name default)."""

    task_name: str | None = (
        "semantic textual similarity, semantic search, paraphrase mining, classification, clustering, and more"
    )
    pipeline_tag: ClassVar[str | None] = "sentence-similarity"
    kind_tags: ClassVar[tuple[str, ...]] = ("sentence-transformers", "sentence-similarity", "feature-extraction",
                                            "dense")  # fmt: skip
    model_words: ClassVar[str] = "sentence-transformers model"


@dataclass
class CrossEncoderModelCardData(ModelCardData):
    """Card data of a cross-encoder (reranker)."""

    pipeline_tag: ClassVar[str | None] = "text-ranking"
    kind_tags: ClassVar[tuple[str, ...]] = ("sentence-transformers", "cross-encoder", "reranker")
    model_words: ClassVar[str] = "cross-encoder"


@dataclass
class SparseEncoderModelCardData(ModelCardData):
    """Card data of a sparse (SPLADE-style) encoder."""

    pipeline_tag: ClassVar[str | None] = "feature-extraction"
    kind_tags: ClassVar[tuple[str, ...]] = ("sentence-transformers", "sparse-encoder", "sparse")
    model_words: ClassVar[str] = "sparse encoder"


@dataclass
class MultiVectorEncoderModelCardData(ModelCardData):
    """Card data of a multi-vector (ColBERT-style) encoder."""

    pipeline_tag: ClassVar[str | None] = "feature-extraction"
    kind_tags: ClassVar[tuple[str, ...]] = ("sentence-transformers", "multi-vector-encoder", "colbert")
    model_words: ClassVar[str] = "multi-vector encoder"


def card_body(model: Any, data: ModelCardData, model_name: str | None) -> str:
    """Title, what the model is, its evaluators' last metrics and how to load it."""
    title = model_name or data.model_name or f"{type(model).__name__} saved by sbert"
    lines = [f"# {title}", "", f"A {data.model_words} saved by sbert {__version__}; the folder loads in sbert and "
             "in sentence-transformers with the same outputs."]  # fmt: skip
    if data.task_name:
        lines += ["", f"Use: {data.task_name}."]
    metrics = getattr(model, "evaluation_metrics", None) or {}
    if metrics:
        lines += ["", "## Evaluation", "", "| metric | value |", "|---|---|"]
        lines += [f"| {k} | {v:.4f} |" for k, v in metrics.items() if isinstance(v, int | float)]
    usage = data.model_id or "path/to/this/folder"
    lines += ["", "## Usage", "", "```python", f"from sbert import {type(model).__name__}", "",
              f'model = {type(model).__name__}("{usage}")', "```", ""]  # fmt: skip
    return "\n".join(lines)


def write_card(folder: Path, model: Any, data: ModelCardData, model_name: str | None,
               train_datasets: list[str] | None) -> None:  # fmt: skip
    """README.md into a folder being saved: front matter over the card already there, or a card of its own.

    Called inside the model's atomic save, so the card and the weights land together.
    """
    path = folder / CARD_FILE
    body = path.read_text(encoding="utf-8") if path.is_file() else card_body(model, data, model_name)
    if body.startswith("---\n"):  # a header already there is replaced, not stacked
        body = body.split("\n---\n", 1)[-1]
    path.write_text(data.front_matter(train_datasets) + body, encoding="utf-8")
