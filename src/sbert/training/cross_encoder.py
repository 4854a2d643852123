"""Training a CrossEncoder: AdamW with linear warm-up on scored or labelled pairs.

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

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from sbert.data.common import Dataset
from sbert.errors import SbertError
from sbert.losses.pair_logits import BinaryCrossEntropyLoss, CrossEntropyLoss, LogitMSELoss, PairLogitLoss
from sbert.reranker.model import CrossEncoder
from sbert.training.schedule import warmup_linear, warmup_steps
from sbert.training.step import build_optimizer

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
    log_steps: int = 0  # a training record every this many steps (0: only at the end)
    eval_steps: int = 0  # an evaluation record every this many steps (0: none)


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
    """Train in place (shuffled each epoch, seeded); returns the wall time in seconds."""
    s = settings or CrossFitSettings()
    pairs, targets = training_targets(model, data, s)
    return run_cross_fit(model, pairs, targets, loss_function(model, s.loss), s)


def run_cross_fit(
    model: CrossEncoder, pairs: list[tuple[str, str]], targets: torch.Tensor, loss_fn: nn.Module,
    s: CrossFitSettings, on_record: Callable[[dict[str, Any]], None] | None = None,
) -> float:  # fmt: skip
    """The cross-encoder's training loop: AdamW (no decay on biases and norms), linear warm-up and decay.

    Every `s.log_steps` steps (and at the end) `on_record` gets {"event": "train", "step", "loss" (the mean
    since the last record), "lr" (the rate of the step)}; every `s.eval_steps` steps {"event": "eval", "step"}.
    Returns the wall time in seconds.
    """
    random.seed(s.seed)
    torch.manual_seed(s.seed)
    per_epoch = (len(pairs) + s.batch_size - 1) // s.batch_size
    steps = min(s.epochs * per_epoch, s.max_steps) if s.max_steps else s.epochs * per_epoch
    optimizer = build_optimizer(model, s.lr, s.weight_decay)
    warm = s.warmup_steps or warmup_steps(steps, s.warmup)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_linear(steps, warm))
    started, step = time.monotonic(), 0
    window: list[torch.Tensor] = []
    model.train()
    for epoch in range(math.ceil(steps / max(per_epoch, 1))):
        order = np.random.default_rng([s.seed, epoch]).permutation(len(pairs))
        for start in range(0, len(order), s.batch_size):
            if step == steps:
                break
            rows = order[start : start + s.batch_size]
            logits = model(model.tokenize_pairs([pairs[i] for i in rows]))
            loss = loss_fn(logits, targets[rows].to(model.device))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), s.max_grad_norm)
            lr = float(schedule.get_last_lr()[0])
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            schedule.step()
            step, window = step + 1, [*window, loss.detach()]
            if on_record is not None:
                window = _records(on_record, s, step, steps, window, lr)
    model.eval()
    return time.monotonic() - started


def _records(on_record: Callable[[dict[str, Any]], None], s: CrossFitSettings, step: int, steps: int,
             window: list[torch.Tensor], lr: float) -> list[torch.Tensor]:  # fmt: skip
    """Hand the log and eval records of `step` to `on_record`; returns the loss window still to log."""
    if (s.log_steps and step % s.log_steps == 0) or step == steps:
        on_record({"event": "train", "step": step, "loss": float(torch.stack(window).mean()), "lr": lr})
        window = []
    if s.eval_steps and step % s.eval_steps == 0:
        on_record({"event": "eval", "step": step})
    return window
