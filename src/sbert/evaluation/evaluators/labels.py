"""sentence-transformers 6.2's `LabelAccuracyEvaluator` (a softmax head's accuracy) and `MSEEvaluatorFromDataFrame`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import torch

from sbert.evaluation.evaluators.base import SentenceEvaluator, embed


def _example_batches(dataloader: Any) -> Iterable[list[Any]]:
    """The loader's batches as lists of examples (its collate is set to keep them whole, as 6.2 sets its own)."""
    dataloader.collate_fn = list
    return iter(dataloader)


class LabelAccuracyEvaluator(SentenceEvaluator):
    """The share of `InputExample` pairs whose label the softmax head (`SoftmaxLoss`) predicts."""

    def __init__(self, dataloader: Any, name: str = "", softmax_model: Any = None, write_csv: bool = True) -> None:
        super().__init__()
        self.dataloader, self.name, self.softmax_model, self.write_csv = dataloader, name, softmax_model, write_csv
        self.csv_file = f"accuracy_evaluation{'_' + name if name else ''}_results.csv"
        self.csv_headers = ["epoch", "steps", "accuracy"]
        self.primary_metric = "accuracy"

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1,
                 steps: int = -1) -> dict[str, float]:  # fmt: skip
        """accuracy: argmax of the head's logits on (u, v) against each example's label."""
        if self.softmax_model is None:
            raise ValueError("LabelAccuracyEvaluator needs softmax_model= (the SoftmaxLoss whose head it scores)")
        head = self.softmax_model
        weight = head.classifier.weight
        correct = total = 0
        for batch in _example_batches(self.dataloader):
            first = embed(model, [e.texts[0] for e in batch], len(batch))
            second = embed(model, [e.texts[1] for e in batch], len(batch))
            u, v = (torch.from_numpy(x).to(weight.device, weight.dtype) for x in (first, second))
            with torch.no_grad():
                predicted = head.logits(u, v).argmax(dim=1).cpu()
            correct += int((predicted == torch.tensor([int(e.label) for e in batch])).sum())
            total += len(batch)
        accuracy = correct / total
        self.write_csv_row(output_path, self.write_csv, [epoch, steps, accuracy])
        metrics = self.prefix_name_to_metrics({"accuracy": accuracy}, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics


class MSEEvaluatorFromDataFrame(SentenceEvaluator):
    """Minus 100 x the MSE of student target-language vectors to teacher source vectors, per pair of columns."""

    def __init__(self, dataframe: list[dict[str, str]], teacher_model: Any, combinations: list[tuple[str, str]],
                 batch_size: int = 8, name: str = "", write_csv: bool = True,
                 truncate_dim: int | None = None) -> None:  # fmt: skip
        super().__init__()
        self.combinations, self.name, self.batch_size = combinations, name, batch_size
        self.write_csv, self.truncate_dim = write_csv, truncate_dim
        self.csv_file = f"mse_evaluation{'_' + name if name else ''}_results.csv"
        self.csv_headers = ["epoch", "steps", *(f"{src}-{trg}" for src, trg in combinations)]
        self.primary_metric = "negative_mse"
        # Rows with an empty side are left out, as 6.2 leaves them.
        self.data = {(src, trg): [(row[src], row[trg]) for row in dataframe if row[src].strip() and row[trg].strip()]
                     for src, trg in combinations}  # fmt: skip
        sources = list(dict.fromkeys(s for rows in self.data.values() for s, _ in rows))
        vectors = embed(teacher_model, sources, batch_size, truncate_dim)
        self.teacher_embeddings = dict(zip(sources, vectors, strict=True))

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1,
                 steps: int = -1) -> dict[str, float]:  # fmt: skip
        """negative_mse: the mean over the combinations."""
        scores = []
        for rows in self.data.values():
            teacher = np.asarray([self.teacher_embeddings[s] for s, _ in rows])
            student = embed(model, [t for _, t in rows], self.batch_size, self.truncate_dim)
            scores.append(float(((teacher - student) ** 2).mean() * 100))
        self.write_csv_row(output_path, self.write_csv, [epoch, steps, *scores])
        metrics = self.prefix_name_to_metrics({"negative_mse": -float(np.mean(scores))}, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics

    @property
    def description(self) -> str:
        """6.2's name for it in model cards."""
        return "Knowledge Distillation"
