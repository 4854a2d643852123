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
from torch.nn import functional

from sbert.formats.layout import write_json
from sbert.losses.base import Loss

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


def concat_features(u: Tensor, v: Tensor, parts: tuple[str, ...]) -> Tensor:
    """The classifier input: the named parts side by side."""
    # u, v: (B, n) -> (B, len(parts) * n)
    return torch.cat([CONCAT_PARTS[p](u, v) for p in parts], dim=-1)


class SoftmaxLoss(Loss):
    """Cross-entropy of a linear classifier over the concatenated pair features."""

    kinds = ("pair-class",)

    def __init__(
        self, dim: int, num_labels: int, concat: str = DEFAULT_CONCAT, label_names: tuple[str, ...] = ()
    ) -> None:
        super().__init__()
        self.parts = parse_concat(concat)
        self.label_names = label_names
        self.classifier = nn.Linear(len(self.parts) * dim, num_labels)

    def logits(self, u: Tensor, v: Tensor) -> Tensor:
        """Unnormalised class scores (B, k)."""
        return self.classifier(concat_features(u, v, self.parts))

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """Cross-entropy against integer labels."""
        assert labels is not None
        return functional.cross_entropy(self.logits(embeddings[0], embeddings[1]), labels.long())

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
        config["in_features"] // len(parts),
        config["num_labels"],
        config["concat"],
        tuple(config.get("label_names", ())),
    )
    head.classifier.load_state_dict(load_file(str(folder / "model.safetensors")))
    return head
