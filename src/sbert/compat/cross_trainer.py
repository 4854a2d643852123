"""`CrossEncoderTrainer`: sentence-transformers 6.2's reranker training API on sbert's one training engine.

    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=ds, loss=BinaryCrossEntropyLoss(model))
    trainer.train()

Columns are read by position as 6.2 reads them (first text, second text, then `label` / `score`). Each
row becomes one pair in a single text column, which the engine trains through the cross-encoder's
`training_chain()` (reranker/training.py): the same batching, checkpoints, resume, mixed precision
and gathers as `sbert train`. Arguments, state, callbacks, `log_history`, `evaluate` and saving are
the drop-in SentenceTransformerTrainer's.
"""

from __future__ import annotations

from typing import Any

from sbert.compat.train_data import LABEL_COLUMNS, table_columns, with_prompts
from sbert.compat.trainer import SentenceTransformerTrainer
from sbert.compat.training_args import SentenceTransformerTrainingArguments
from sbert.data.common import Dataset
from sbert.errors import SbertError
from sbert.losses.pair_logits import BinaryCrossEntropyLoss, CrossEntropyLoss, PairLogitLoss


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
                    "BinaryCrossEntropyLoss, CrossEntropyLoss or MSELoss (sbert.cross_encoder.losses)"
                )
            value.check_labels(self.model.num_labels)
        return built

    def _default_loss(self, data: Any) -> PairLogitLoss:
        return self.get_default_loss(self.model)

    def get_default_loss(self, model: Any) -> PairLogitLoss:
        """6.2's default: BinaryCrossEntropyLoss for a one-output model, else CrossEntropyLoss."""
        return BinaryCrossEntropyLoss(model) if model.num_labels == 1 else CrossEntropyLoss(model)

    def _datasets(self) -> dict[str, Dataset]:
        """The one training set as a column of (first, second) pairs with their labels."""
        name, data = next(iter(self._sets(self.train_dataset).items()))
        columns = with_prompts(table_columns(data, name), self.args.prompts, name)
        label = next((c for c in LABEL_COLUMNS if c in columns), None)
        texts = [c for c in columns if c != label]
        if label is None or len(texts) != 2:
            raise SbertError(f"training set {name!r}: a cross-encoder trains on two text columns and a 'label' or "
                             f"'score' column (columns: {', '.join(columns)})")  # fmt: skip
        pairs = [((str(a), str(b)),) for a, b in zip(columns[texts[0]], columns[texts[1]], strict=True)]
        labels = [float(v) for v in columns[label]]
        source = f"columns by position: pairs of {texts[0]} and {texts[1]}; label: {label}"
        return {name: Dataset(name, "text", pairs, labels, source=source)}  # type: ignore[arg-type]
