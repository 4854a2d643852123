"""NLI accuracy with the classification head a training run saved beside the model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from sbert.data.common import Dataset
from sbert.errors import SbertError
from sbert.evaluation.common import encode_columns
from sbert.losses.softmax import load_head

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder


def evaluate_nli(
    model: SentenceEncoder, model_dir: Path, dataset: Dataset, batch_size: int | None = None
) -> dict[str, float]:
    """Accuracy (x100) of softmax(W [u; v; |u-v|]) against the gold labels."""
    head = load_head(model_dir)
    if tuple(head.label_names) != tuple(dataset.label_names):
        raise SbertError(f"{model_dir}: head labels {head.label_names} differ from {dataset.name}'s")
    u, v = encode_columns(model, [dataset.column(0), dataset.column(1)], batch_size)
    with torch.inference_mode():
        logits = head.logits(torch.from_numpy(u), torch.from_numpy(v))
    predicted = logits.argmax(dim=1).numpy()
    gold = np.asarray(dataset.labels, dtype=np.int64)
    return {"accuracy": 100 * float((predicted == gold).mean())}
