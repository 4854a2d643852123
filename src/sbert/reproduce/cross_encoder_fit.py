"""Training the cross-encoder baseline: regression on scored pairs, AdamW with linear warm-up.

An experiment runner (reproduce/ imports training and evaluation; neither imports it).
"""

from __future__ import annotations

import random
import time

import numpy as np
import torch
from torch import nn

from sbert.baselines.cross_encoder import CrossEncoder
from sbert.data.common import Dataset
from sbert.training.schedule import warmup_linear, warmup_steps


def fit_cross_encoder(
    model: CrossEncoder, data: Dataset, epochs: int = 1, batch_size: int = 16, lr: float = 2e-5, seed: int = 0
) -> float:
    """Regression training on scored pairs (labels in [0, 1]); returns the wall time in seconds."""
    random.seed(seed)
    torch.manual_seed(seed)
    pairs = [(t[0], t[1]) for t in data.texts]
    labels = torch.tensor(data.labels, dtype=torch.float32)
    steps = epochs * ((len(pairs) + batch_size - 1) // batch_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_linear(steps, warmup_steps(steps, 0.1)))
    loss_fn = nn.BCEWithLogitsLoss()
    started = time.monotonic()
    model.train()
    for epoch in range(epochs):
        order = np.random.default_rng([seed, epoch]).permutation(len(pairs))
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            loss = loss_fn(
                model(model.tokenize_pairs([pairs[i] for i in rows])), labels[rows].to(model.head.weight.device)
            )
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            schedule.step()
    model.eval()
    return time.monotonic() - started
