"""The loss of a table under the model as it is now, without a gradient: the trainer's `eval_loss`.

The same forward as a training step (setup.TrainModule: each column embedded, then the objective's loss),
in eval mode, over batches of `batch_size` rows in table order; the batches' losses are averaged weighted
by their rows, as transformers' evaluation loop averages them.
"""

from __future__ import annotations

from typing import Any

import torch

from sbert.data.common import Dataset
from sbert.losses.base import Loss
from sbert.training.setup import TrainModule


def dataset_loss(model: Any, loss: Loss, dataset: Dataset, batch_size: int) -> float:
    """The mean loss of `dataset`'s rows (texts already prompted) in batches of `batch_size`."""
    if not dataset.texts:
        raise ValueError(f"eval_dataset {dataset.name!r} has no rows")
    module = TrainModule(model, [loss])
    was_training = model.training
    model.eval()
    total, rows = 0.0, 0
    try:
        with torch.no_grad():
            for start in range(0, len(dataset.texts), batch_size):
                batch = dataset.texts[start : start + batch_size]
                columns = [model.tokenize(list(column)) for column in zip(*batch, strict=True)]
                labels = None
                if dataset.labels is not None:
                    labels = torch.tensor(dataset.labels[start : start + batch_size], dtype=torch.float32)
                    labels = labels.to(model.device)
                total += float(module(0, columns, labels)) * len(batch)
                rows += len(batch)
    finally:
        model.train(was_training)
    return total / rows
