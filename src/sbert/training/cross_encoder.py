"""Training a CrossEncoder on scored or labelled pairs, on sbert's training engine (reranker/training.py).

AdamW with linear warm-up and decay, as `sbert train` runs it: the pairs are one column of a table.

Objectives, as sentence-transformers' CrossEncoder losses name them:
- scores in [0, 1] (STS, relevance): binary cross-entropy on the logit (`bce`, the default),
  or mean squared error of sigmoid(logit) against the score (`mse`);
- labelled pairs with a positive label (SNLI entailment against the rest, for a reranker):
  binary cross-entropy on 1/0 targets;
- labelled pairs with no positive label: softmax cross-entropy over every label (a 3-way NLI
  classifier; the model needs that many labels);
- triplets (anchor, positive, negatives...), from `sbert mine-negatives` for example: (anchor,
  positive) scores 1 and each (anchor, negative) 0, binary cross-entropy.
`random_negatives` k adds, for every positive pair, k pairs of its first text with the second
text of other random examples, scored 0: a reranker then also sees the unrelated documents a
retriever returns, not only the hard negatives of labelled data.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass

import numpy as np
import torch

from sbert.data.common import Dataset
from sbert.errors import SbertError
from sbert.losses.pair_logits import BinaryCrossEntropyLoss, CrossEntropyLoss, LogitMSELoss, PairLogitLoss
from sbert.reranker.model import CrossEncoder
from sbert.training.config import Objective, Stage, TrainConfig
from sbert.training.trainer import Trainer

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
    random_negatives: int = 0  # per positive pair: pairs with other examples' second texts, scored 0
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    warmup_steps: int = 0  # a step count; when set it wins over the `warmup` share
    max_steps: int = 0  # stop after this many steps (0: every epoch)


def binary_pairs(data: Dataset, settings: CrossFitSettings) -> Dataset:
    """Triplets, or labelled pairs with a positive label, as pairs scored 1/0, plus the random negatives.

    Other data comes back as it is (random negatives need a positive label or triplets).
    """
    if data.kind == "triplet":
        texts = [pair for t in data.texts for pair in [(t[0], t[1]), *((t[0], n) for n in t[2:])]]
        labels = [float(i == 0) for t in data.texts for i in range(len(t) - 1)]
    elif data.kind == "pair-class" and settings.positive_label is not None and data.labels is not None:
        if settings.positive_label not in data.label_names:
            names = ", ".join(data.label_names)
            raise SbertError(f"--positive {settings.positive_label!r}: {data.name} has labels {names}")
        wanted = data.label_names.index(settings.positive_label)
        texts, labels = [(t[0], t[1]) for t in data.texts], [float(y == wanted) for y in data.labels]
    else:
        if settings.random_negatives:
            raise SbertError(f"{data.name}: random negatives need triplets or labelled pairs with --positive")
        return data
    negatives = _random_negatives(texts, labels, settings) if settings.random_negatives else []
    rows: list[tuple[str, ...]] = [*texts, *negatives]
    return Dataset(data.name, "pair-score", rows, labels + [0.0] * len(negatives))


def _random_negatives(texts: list[tuple[str, str]], labels: list[float], s: CrossFitSettings) -> list[tuple[str, str]]:
    """`random_negatives` pairs per positive: its first text with a random other example's second text."""
    rng = np.random.default_rng([s.seed, 7])
    out = []
    for (first, _), label in zip(texts, labels, strict=True):
        if label != 1.0:
            continue
        taken = 0
        for j in rng.integers(0, len(texts), size=4 * s.random_negatives):  # spare draws for collisions
            if texts[j][0] != first:
                out.append((first, texts[j][1]))
                taken += 1
                if taken == s.random_negatives:
                    break
    return out


def training_targets(
    model: CrossEncoder, data: Dataset, settings: CrossFitSettings
) -> tuple[list[tuple[str, str]], torch.Tensor]:
    """The training pairs and their targets for the model's head, or a one-line error when data and head do not fit."""
    data = binary_pairs(data, settings)
    pairs = [(t[0], t[1]) for t in data.texts]
    if data.labels is None or data.kind not in ("pair-score", "pair-class"):
        raise SbertError(f"{data.name}: a cross-encoder trains on scored or labelled pairs or triplets, "
                         f"not {data.kind} data")  # fmt: skip
    labels = np.asarray(data.labels, dtype=np.float64)
    if data.kind == "pair-class":
        if model.num_labels != len(data.label_names):
            raise SbertError(
                f"{data.name}: {len(data.label_names)} labels but the model has {model.num_labels} outputs; "
                "pass --positive LABEL to train a one-score reranker"
            )
        return pairs, torch.tensor(labels, dtype=torch.long)
    if model.num_labels != 1:
        raise SbertError(f"{data.name}: scores need a one-output model, this one has {model.num_labels}")
    if labels.min() < 0 or labels.max() > 1:
        raise SbertError(f"{data.name}: scores must lie in [0, 1] (found {labels.min():g} .. {labels.max():g})")
    return pairs, torch.tensor(labels, dtype=torch.float32)


def loss_function(model: CrossEncoder, loss: str) -> PairLogitLoss:
    """Cross-entropy for a multi-label head, else BCE on the logit or MSE on its sigmoid."""
    if loss not in LOSSES:
        raise SbertError(f"--loss {loss!r}: known {', '.join(LOSSES)}")
    if model.num_labels > 1:
        return CrossEntropyLoss()
    if loss == "mse":
        return LogitMSELoss(activation_fn=torch.sigmoid)
    return BinaryCrossEntropyLoss()


def fit_cross_encoder(model: CrossEncoder, data: Dataset, settings: CrossFitSettings | None = None) -> float:
    """Train in place on sbert's training engine (the pairs as one column, seeded); returns the wall time in s."""
    s = settings or CrossFitSettings()
    pairs, targets = training_targets(model, data, s)
    loss = loss_function(model, s.loss)
    rows = Dataset(data.name, "text", [(pair,) for pair in pairs], targets.tolist())  # type: ignore[misc]
    stage = Stage((Objective(type(loss).__name__, "memory:pairs", loss=loss),), epochs=s.epochs,
                  batch_size=s.batch_size, lr=s.lr, warmup=s.warmup, warmup_steps=s.warmup_steps,
                  weight_decay=s.weight_decay, max_grad_norm=s.max_grad_norm, max_steps=s.max_steps)  # fmt: skip
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sbert-cross-fit-") as out:  # the caller saves the model itself
        config = TrainConfig(model="(a cross-encoder in memory)", output=out, stages=(stage,), seed=s.seed,
                             device=str(model.device))  # fmt: skip
        Trainer(config, show_progress=False, datasets={"memory:pairs": rows}, model=model).run()
    model.eval()
    return time.monotonic() - started
