"""Training a CrossEncoder: AdamW with linear warm-up on scored or labelled pairs.

Objectives, as sentence-transformers' CrossEncoder losses name them:
- scores in [0, 1] (STS, relevance): binary cross-entropy on the logit (`bce`, the default),
  or mean squared error of sigmoid(logit) against the score (`mse`);
- labelled pairs with a positive label (SNLI entailment against the rest, for a reranker):
  binary cross-entropy on 1/0 targets;
- labelled pairs with no positive label: softmax cross-entropy over every label (a 3-way NLI
  classifier; the model needs that many labels).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from sbert.cross_encoder import CrossEncoder
from sbert.data.common import Dataset
from sbert.errors import SbertError
from sbert.training.schedule import warmup_linear, warmup_steps

LOSSES = ("bce", "mse")


@dataclass(frozen=True)
class CrossFitSettings:
    """How to train: passes, batch, learning rate, seed, loss, and the positive label of labelled pairs."""

    epochs: int = 1
    batch_size: int = 16
    lr: float = 2e-5
    seed: int = 0
    loss: str = "bce"
    positive_label: str | None = None  # labelled pairs: this label is 1, the others 0
    warmup: float = 0.1


def training_targets(model: CrossEncoder, data: Dataset, settings: CrossFitSettings) -> torch.Tensor:
    """The target of every pair for the model's head, or a one-line error when data and head do not fit."""
    if data.labels is None or data.kind not in ("pair-score", "pair-class"):
        raise SbertError(f"{data.name}: a cross-encoder trains on scored or labelled pairs, not {data.kind} data")
    labels = np.asarray(data.labels, dtype=np.float64)
    if data.kind == "pair-class" and settings.positive_label is not None:
        if settings.positive_label not in data.label_names:
            names = ", ".join(data.label_names)
            raise SbertError(f"--positive {settings.positive_label!r}: {data.name} has labels {names}")
        labels = (labels == data.label_names.index(settings.positive_label)).astype(np.float64)
    elif data.kind == "pair-class":
        if model.num_labels != len(data.label_names):
            raise SbertError(
                f"{data.name}: {len(data.label_names)} labels but the model has {model.num_labels} outputs; "
                "pass --positive LABEL to train a one-score reranker"
            )
        return torch.tensor(labels, dtype=torch.long)
    if model.num_labels != 1:
        raise SbertError(f"{data.name}: scores need a one-output model, this one has {model.num_labels}")
    if labels.min() < 0 or labels.max() > 1:
        raise SbertError(f"{data.name}: scores must lie in [0, 1] (found {labels.min():g} .. {labels.max():g})")
    return torch.tensor(labels, dtype=torch.float32)


def loss_function(model: CrossEncoder, loss: str) -> nn.Module:
    """Cross-entropy for a multi-label head, else BCE on the logit or MSE on its sigmoid."""
    if loss not in LOSSES:
        raise SbertError(f"--loss {loss!r}: known {', '.join(LOSSES)}")
    if model.num_labels > 1:
        return nn.CrossEntropyLoss()
    if loss == "mse":
        return _SigmoidMSE()
    return nn.BCEWithLogitsLoss()


class _SigmoidMSE(nn.Module):
    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return nn.functional.mse_loss(torch.sigmoid(logits), target)


def fit_cross_encoder(model: CrossEncoder, data: Dataset, settings: CrossFitSettings | None = None) -> float:
    """Train in place (shuffled each epoch, seeded); returns the wall time in seconds."""
    s = settings or CrossFitSettings()
    random.seed(s.seed)
    torch.manual_seed(s.seed)
    pairs = [(t[0], t[1]) for t in data.texts]
    targets = training_targets(model, data, s)
    loss_fn = loss_function(model, s.loss)
    steps = s.epochs * ((len(pairs) + s.batch_size - 1) // s.batch_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_linear(steps, warmup_steps(steps, s.warmup)))
    started = time.monotonic()
    model.train()
    for epoch in range(s.epochs):
        order = np.random.default_rng([s.seed, epoch]).permutation(len(pairs))
        for start in range(0, len(order), s.batch_size):
            rows = order[start : start + s.batch_size]
            logits = model(model.tokenize_pairs([pairs[i] for i in rows]))
            loss = loss_fn(logits, targets[rows].to(model.device))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            schedule.step()
    model.eval()
    return time.monotonic() - started
