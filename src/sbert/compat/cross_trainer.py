"""`CrossEncoderTrainer`: sentence-transformers 6.2's reranker training API on sbert's one training engine.

    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=ds, loss=BinaryCrossEntropyLoss(model))
    trainer.train()

Columns are read by position as 6.2 reads them, in the layout the loss takes (losses/listwise.py):
(first text, second text, label) for the pair losses, (query, positive, negatives..., label) for
MarginMSE, (query, [documents], [labels]) for the list losses. Each document becomes a column of
(query, document) pairs, which the engine trains through the cross-encoder's `training_chain()`
(reranker/training.py): the same batching, checkpoints, resume, mixed precision
and gathers as `sbert train`. Arguments, state, callbacks, `log_history`, `evaluate` and saving are
the drop-in SentenceTransformerTrainer's.
"""

from __future__ import annotations

import math
from typing import Any, cast

from sbert.compat.train_data import LABEL_COLUMNS, table_columns, with_prompts
from sbert.compat.trainer import SentenceTransformerTrainer
from sbert.compat.training_args import SentenceTransformerTrainingArguments
from sbert.data.common import Dataset
from sbert.errors import SbertError
from sbert.losses.pair_logits import BinaryCrossEntropyLoss, CrossEntropyLoss, PairLogitLoss
from sbert.losses.pair_negatives import MultipleNegativesRankingLoss, drawn_negatives


class CrossEncoderTrainingArguments(SentenceTransformerTrainingArguments):
    """The same fields and defaults as SentenceTransformerTrainingArguments (as in 6.2)."""


class CrossEncoderTrainer(SentenceTransformerTrainer):
    """Trains a CrossEncoder on (text, text, label) tables; BCE (one output) or cross-entropy by default."""

    training_args_class = CrossEncoderTrainingArguments

    def _losses(self, loss: Any) -> dict[str, Any]:
        """The base trainer's reading of `loss` (one, a dict, a factory, or the default), for one pair table."""
        sets = self._sets(self.train_dataset)
        if len(sets) != 1:
            raise SbertError(f"CrossEncoderTrainer trains on one training set here, got {len(sets)}: "
                             f"{', '.join(sets)} (concatenate them)")  # fmt: skip
        built = super()._losses(loss)
        for value in built.values():
            if not isinstance(value, PairLogitLoss):
                raise SbertError(
                    f"loss is a {type(value).__name__}: sbert trains cross-encoders with "
                    "the losses of sbert.cross_encoder.losses"
                )
            value.check_labels(self.model.num_labels)
        return built

    def _default_loss(self, data: Any) -> PairLogitLoss:
        return self.get_default_loss(self.model)

    def get_default_loss(self, model: Any) -> PairLogitLoss:
        """6.2's default: BinaryCrossEntropyLoss for a one-output model, else CrossEntropyLoss."""
        return BinaryCrossEntropyLoss(model) if model.num_labels == 1 else CrossEntropyLoss(model)

    def _datasets(self) -> dict[str, Dataset]:
        """The one training set as columns of (query, document) pairs with their labels, as its loss reads them."""
        name, data = next(iter(self._sets(self.train_dataset).items()))
        columns = with_prompts(table_columns(data, name), self.args.prompts, name)
        label = next((c for c in LABEL_COLUMNS if c in columns), None)
        texts = [c for c in columns if c != label]
        layout = getattr(self.loss[name], "layout", "pairs")
        if layout == "negatives" and len(texts) >= 2:
            return {name: self._with_negatives(name, columns, texts)}
        if label is None or len(texts) < 2 or (layout not in ("columns", "negatives") and len(texts) != 2):
            loss = type(self.loss[name]).__name__
            label_part = "" if layout == "negatives" else f" and a label column ({', '.join(LABEL_COLUMNS)})"
            raise SbertError(f"training set {name!r}: {loss} trains on {LAYOUTS[layout]}{label_part}; "
                             f"columns: {', '.join(columns)}")  # fmt: skip
        queries = [str(q) for q in columns[texts[0]]]
        if layout == "lists":
            rows, labels = _padded_lists(name, queries, columns[texts[1]], columns[label])
        else:
            documents = list(zip(*[columns[c] for c in texts[1:]], strict=True))
            rows = [tuple((q, str(d)) for d in docs) for q, docs in zip(queries, documents, strict=True)]
            labels = [v if isinstance(v, float | int) else [float(x) for x in v] for v in columns[label]]
        source = f"columns by position: {texts[0]} paired with {', '.join(texts[1:])}; label: {label}"
        return {name: Dataset(name, "text", rows, labels, source=source)}

    def _with_negatives(self, name: str, columns: dict[str, list[Any]], texts: list[str]) -> Dataset:
        """(query, positive, hard negatives...) rows as pair columns, plus the negatives drawn from other rows."""
        loss = cast(MultipleNegativesRankingLoss, self.loss[name])
        queries = [str(q) for q in columns[texts[0]]]
        candidates = [[str(c) for c in row] for row in zip(*[columns[c] for c in texts[1:]], strict=True)]
        per_row = loss.drawn_per_row(self.args.per_device_train_batch_size, len(queries), len(texts) - 1)
        drawn = drawn_negatives(candidates, per_row, self.args.seed)
        rows: list[Any] = [
            tuple((q, d) for d in [*own, *extra]) for q, own, extra in zip(queries, candidates, drawn, strict=True)
        ]
        source = (f"columns by position: {texts[0]} paired with {', '.join(texts[1:])} and {per_row} negatives "
                  "drawn from other rows")  # fmt: skip
        return Dataset(name, "text", rows, None, source=source)


# What each loss layout reads, in the error that names it.
LAYOUTS = {"pairs": "two text columns", "columns": "a query column then one column per document",
           "negatives": "a query column, a positive column and any hard-negative columns",
           "lists": "a query column and a column of document lists"}  # fmt: skip


def _padded_lists(name: str, queries: list[str], documents: list[Any], labels: list[Any]) -> tuple[list, list]:
    """(query, [docs], [labels]) rows as K pair columns, K the longest list: shorter rows padded, their labels NaN."""
    width = max((len(docs) for docs in documents), default=0)
    rows, targets = [], []
    for i, (query, docs, row_labels) in enumerate(zip(queries, documents, labels, strict=True)):
        if isinstance(docs, str) or len(docs) != len(row_labels):
            raise SbertError(f"training set {name!r}, row {i}: a list of documents and one label per document "
                             f"(got {len(row_labels)} labels)")  # fmt: skip
        pads = width - len(docs)
        # A padded document is scored like any other (its score masked): an empty text costs the least.
        rows.append(tuple((query, str(d)) for d in [*docs, *[""] * pads]))
        targets.append([float(v) for v in row_labels] + [math.nan] * pads)
    return rows, targets
