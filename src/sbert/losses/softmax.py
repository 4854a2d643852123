"""Classification objective of SBERT (Reimers & Gurevych 2019, section 3).

    o = softmax(W_t [u; v; |u - v|]),   loss = cross-entropy(o, gold label)

u and v are the sentence embeddings of the two sentences, W_t has shape (3n x k) for embedding
size n and k classes. The concatenation is configurable for the paper's ablation (Table 6):
(u,v), (|u-v|), (u*v), (|u-v|,u*v), (u,v,u*v), (u,v,|u-v|) [default], (u,v,|u-v|,u*v).
Inputs: pair-class datasets (NLI: entailment / neutral / contradiction).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from torch import Tensor, nn

from sbert.formats.layout import write_json
from sbert.losses.base import Loss
from sbert.renamed_kwargs import renamed_kwargs

HEAD_FOLDER = "classifier_head"
CONCAT_PARTS = {
    "u": lambda u, v: u,
    "v": lambda u, v: v,
    "|u-v|": lambda u, v: torch.abs(u - v),
    "u*v": lambda u, v: u * v,
}
DEFAULT_CONCAT = "u,v,|u-v|"


def parse_concat(spec: str) -> tuple[str, ...]:
    """'u,v,|u-v|' -> ('u', 'v', '|u-v|'), validating every part."""
    parts = tuple(p.strip() for p in spec.replace("(", "").replace(")", "").split(",") if p.strip())
    unknown = [p for p in parts if p not in CONCAT_PARTS]
    if unknown or not parts:
        raise ValueError(f"concat {spec!r}: parts must be among {', '.join(CONCAT_PARTS)}")
    return parts


def _concat_spec(rep: bool, difference: bool, multiplication: bool) -> str:
    """sentence-transformers' three switches as a concat spec, in its order: u, v, |u-v|, u*v."""
    return ",".join(part for part, on in (("u,v", rep), ("|u-v|", difference), ("u*v", multiplication)) if on)


def _model_width(model: nn.Module | None) -> int:
    """The sentence vector width of `model` (SoftmaxLoss without embedding_dimension)."""
    width = getattr(model, "chain_dimension", None)
    if width is None:
        raise ValueError("SoftmaxLoss needs embedding_dimension (or the model whose vectors it classifies)")
    return int(width)


def concat_features(u: Tensor, v: Tensor, parts: tuple[str, ...]) -> Tensor:
    """The classifier input: the named parts side by side."""
    # u, v: (B, n) -> (B, len(parts) * n)
    return torch.cat([CONCAT_PARTS[p](u, v) for p in parts], dim=-1)


class SoftmaxLoss(Loss):
    """Cross-entropy of a linear classifier over the concatenated pair features.

    `SoftmaxLoss(model, embedding_dimension, num_labels)` as in sentence-transformers (its three
    `concatenation_sent_*` switches pick u,v / |u-v| / u*v); sbert's `concat` spec takes precedence.
    """

    kinds = ("pair-class",)

    @renamed_kwargs(sentence_embedding_dimension="embedding_dimension")
    def __init__(
        self,
        model: nn.Module | None = None,
        embedding_dimension: int | None = None,
        num_labels: int = 3,
        concatenation_sent_rep: bool = True,
        concatenation_sent_difference: bool = True,
        concatenation_sent_multiplication: bool = False,
        loss_fct: nn.Module = nn.CrossEntropyLoss(),  # noqa: B008  (stateless, as sentence-transformers' default)
        *,
        concat: str | None = None,
        label_names: tuple[str, ...] = (),
    ) -> None:
        super().__init__()
        self.name_model(model)
        flags = (concatenation_sent_rep, concatenation_sent_difference, concatenation_sent_multiplication)
        self.parts = parse_concat(concat if concat is not None else _concat_spec(*flags))
        self.label_names = label_names
        dim = embedding_dimension if embedding_dimension is not None else _model_width(model)
        self.classifier = nn.Linear(len(self.parts) * dim, num_labels)
        if model is not None:  # sentence-transformers puts the head on the model's device at construction
            self.classifier.to(next(model.parameters()).device)
        self.loss_fct = loss_fct

    def logits(self, u: Tensor, v: Tensor) -> Tensor:
        """Unnormalised class scores (B, k)."""
        return self.classifier(concat_features(u, v, self.parts))

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """Cross-entropy against integer labels."""
        assert labels is not None
        return self.loss_fct(self.logits(embeddings[0], embeddings[1]), labels.long())

    def config(self) -> dict[str, Any]:
        """What rebuilds the head for NLI evaluation."""
        return {
            "concat": ",".join(self.parts),
            "in_features": self.classifier.in_features,
            "num_labels": self.classifier.out_features,
            "label_names": list(self.label_names),
        }

    def save_head(self, path: Path) -> None:
        """Store the classifier beside the model (sentence-transformers ignores the extra folder)."""
        folder = path / HEAD_FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / "config.json", self.config())
        save_file(
            {k: v.detach().cpu().contiguous() for k, v in self.classifier.state_dict().items()},
            str(folder / "model.safetensors"),
        )


def load_head(model_dir: Path) -> SoftmaxLoss:
    """The classifier a classification run saved beside its model."""
    from safetensors.torch import load_file

    from sbert.errors import ModelFormatError
    from sbert.formats.layout import read_json

    folder = model_dir / HEAD_FOLDER
    if not (folder / "config.json").is_file():
        raise ModelFormatError(f"{model_dir}: no {HEAD_FOLDER}/ (train with the classification objective first)")
    config = read_json(folder / "config.json")
    parts = parse_concat(config["concat"])
    head = SoftmaxLoss(
        embedding_dimension=config["in_features"] // len(parts),
        num_labels=config["num_labels"],
        concat=config["concat"],
        label_names=tuple(config.get("label_names", ())),
    )
    head.classifier.load_state_dict(load_file(str(folder / "model.safetensors")))
    return head
