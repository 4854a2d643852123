"""Contrastive Tension (Carlsson et al. 2021): two copies of the encoder learn to agree on identical sentences.

The model being trained is the second copy (kept); the first is a copy taken at construction, trained
alongside and then discarded. It is part of the loss (its weights are a loss parameter: optimised with
the model, held in checkpoints, never saved with the model).

    ContrastiveTensionLoss                  Σ BCE-with-logits(u_i · v_i, y_i)      u = copy(a), v = model(b)
        y_i = 1 where both texts are the same (given as a label, or read from the token ids), else 0;
        ContrastiveTensionDataLoader makes such batches (one identical pair in `pos_neg_ratio`).
    ContrastiveTensionLossInBatchNegatives  ½ [CE(e^t cos(u_i, v_j), j = i) + CE(its transpose)]
        u = copy(x), v = model(x) on one text column; t a learned log-scale (log 20 at the start).
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional

from sbert.data.examples import InputExample
from sbert.losses.base import Loss
from sbert.losses.options import Similarity
from sbert.modules.base import Features
from sbert.vectors.scores import cos_sim


def _same_texts(first: Features, second: Features) -> Tensor:
    """1.0 where a row's attended token ids are the same in both columns, else 0.0."""
    same = [torch.equal(a[m.bool()], b[n.bool()]) for a, m, b, n in
            zip(first["input_ids"], first["attention_mask"], second["input_ids"], second["attention_mask"],
                strict=True)]  # fmt: skip
    return torch.tensor(same, dtype=torch.float32, device=first["input_ids"].device)


class _TwoCopies(Loss):
    """A loss that runs the trained model and its own copy of it on the batch's columns."""

    needs_model = True

    def __init__(self, model: nn.Module | None) -> None:
        super().__init__()
        self.name_model(model)
        if model is None:
            raise ValueError(f"{type(self).__name__} needs the model: it trains a copy of it alongside")
        self.model1 = copy.deepcopy(model)  # registered: trained and checkpointed with the loss, not saved

    def copy_vectors(self, features: Features) -> Tensor:
        """The copy's sentence vectors of one column."""
        return self.model1(dict(features))["sentence_embedding"]


class ContrastiveTensionLoss(_TwoCopies):
    """`ContrastiveTensionLoss(model)`: identical pairs pulled together, other pairs pushed apart (dot product)."""

    kinds = ("pair-class", "pair")

    def __init__(self, model: nn.Module | None = None) -> None:
        super().__init__(model)

    def forward_model(self, model: nn.Module, columns: list[Features], labels: Tensor | None) -> Tensor:
        """The summed BCE of each pair's dot product against whether its two texts are the same."""
        first, second = columns
        u, v = self.copy_vectors(first), model(dict(second))["sentence_embedding"]
        scores = (u * v).sum(dim=-1)
        target = _same_texts(first, second) if labels is None else labels.view(-1)
        return functional.binary_cross_entropy_with_logits(scores, target.to(scores.dtype), reduction="sum")


class ContrastiveTensionLossInBatchNegatives(_TwoCopies):
    """`ContrastiveTensionLossInBatchNegatives(model, scale=20.0, similarity_fct=cos_sim)` on one text column."""

    kinds = ("text",)

    def __init__(
        self, model: nn.Module | None = None, scale: float = 20.0, similarity_fct: Similarity = cos_sim
    ) -> None:
        super().__init__(model)
        self.similarity_fct = similarity_fct
        self.logit_scale = nn.Parameter(torch.ones([]) * math.log(scale))

    def forward_model(self, model: nn.Module, columns: list[Features], labels: Tensor | None) -> Tensor:
        """Each text's copy vector against every model vector of the batch, both ways."""
        u, v = self.copy_vectors(columns[0]), model(dict(columns[0]))["sentence_embedding"]
        scores = self.similarity_fct(u, v) * self.logit_scale.exp()
        target = torch.arange(len(scores), device=scores.device)
        return (functional.cross_entropy(scores, target) + functional.cross_entropy(scores.t(), target)) / 2


class ContrastiveTensionDataLoader:
    """Batches of `InputExample` pairs for ContrastiveTensionLoss: one identical pair in `pos_neg_ratio`, label 1."""

    def __init__(self, sentences: list[str], batch_size: int, pos_neg_ratio: int = 8) -> None:
        if batch_size % pos_neg_ratio != 0:
            raise ValueError(f"ContrastiveTensionDataLoader: batch_size {batch_size} must be divisible by "
                             f"pos_neg_ratio {pos_neg_ratio}")  # fmt: skip
        self.sentences, self.batch_size, self.pos_neg_ratio = sentences, batch_size, pos_neg_ratio
        self.collate_fn: Any = None

    def __iter__(self) -> Iterator[Any]:
        random.shuffle(self.sentences)
        sentences = iter(self.sentences)
        for _ in range(len(self)):
            batch = []
            for i in range(self.batch_size):
                first = next(sentences)
                label = int(i % self.pos_neg_ratio == 0)
                batch.append(InputExample(texts=[first, first if label else next(sentences)], label=label))
            yield self.collate_fn(batch) if self.collate_fn is not None else batch

    def __len__(self) -> int:
        per_batch = 2 * self.batch_size - self.batch_size // self.pos_neg_ratio
        return len(self.sentences) // per_batch
