"""A Hugging Face sequence-classification model reading a text pair jointly: the cross-encoder's module.

    logits = classifier(encoder([CLS] a [SEP] b [SEP]))        (B, num_labels)

It is a `Transformer` whose model carries its classification head (BertForSequenceClassification,
RobertaForSequenceClassification, ...), so a folder saved by sentence-transformers' CrossEncoder
or by Hugging Face loads as it is, and the encode engine's backends (torch, ONNX fp32/int8) run
it unchanged: its output goes in the chain's `sentence_embedding` slot, one row of logits per pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from transformers import AutoModelForSequenceClassification

from sbert.formats import layout
from sbert.modules.base import Features
from sbert.modules.transformer import Transformer

# What sentence-transformers 6 writes to a cross-encoder's sentence_bert_config.json.
ST_TASK_CONFIG = {
    "transformer_task": "sequence-classification",
    "modality_config": {"text": {"method": "forward", "method_output_name": "logits"}},
    "module_output_name": "scores",
}


class PairClassifier(Transformer):
    """Tokenizes (a, b) pairs into one input and maps them to classification logits."""

    module_type = "sentence_transformers.base.modules.transformer.Transformer"
    auto_class: ClassVar[Any] = AutoModelForSequenceClassification
    packed_output: ClassVar[str | None] = None  # the model's own head pools a padded row (CLS, a pooler)

    @property
    def num_labels(self) -> int:
        """Logits per pair: 1 for a relevance score, 3 for NLI labels."""
        return int(self.auto_model.config.num_labels or 1)

    def pair_ids(self, pairs: Sequence[tuple[str, str]]) -> list[list[int]]:
        """Token ids of each joined pair, the longer side cut first to fit max_seq_length.

        The same ids as the tokenizer's `tokenizer(a, b, truncation=True)` (longest_first),
        which is what sentence-transformers' CrossEncoder feeds its model.
        """
        return self._pair_ids(pairs, self.max_seq_length)

    def prompted_pair_ids(self, pairs: Sequence[tuple[str, str]], prompt: str) -> list[list[int]]:
        """`pair_ids` with the prompt before each pair's first text, where sentence-transformers puts it."""
        return self.pair_ids([(prompt + a, b) for a, b in pairs] if prompt else pairs)

    def module_entries(self) -> list[layout.ModuleEntry]:
        """modules.json: the one module, at the folder's root."""
        return [layout.ModuleEntry(0, "0", "", self.module_type)]

    def over_limit(self, pairs: Sequence[tuple[str, str]]) -> list[int]:
        """The indices of the pairs longer than max_seq_length, which `pair_ids` cuts."""
        limit = self.max_seq_length
        return [i for i, row in enumerate(self._pair_ids(pairs, limit + 1)) if len(row) > limit]

    def _pair_ids(self, pairs: Sequence[tuple[str, str]], max_length: int) -> list[list[int]]:
        if not pairs:
            return []
        if self.do_lower_case:
            pairs = [(a.lower(), b.lower()) for a, b in pairs]
        fast = self.fast_tokenizer(max_length)
        if fast is not None:
            return [e.ids for e in fast.encode_batch_fast([(a, b) for a, b in pairs])]
        encoded = self.tokenizer(
            [a for a, _ in pairs], [b for _, b in pairs], truncation=True, max_length=max_length,
            return_attention_mask=False, return_token_type_ids=False,
        )  # fmt: skip
        return list(encoded["input_ids"])

    def pad(self, rows: Sequence[Sequence[int]]) -> Features:
        """Padded features; token types 1 after the first separator (the second text), as BERT's tokenizer sets them.

        Only where the tokenizer itself returns token types, as the model was trained with.
        """
        features = super().pad(rows)
        types = features.get("token_type_ids")
        if types is None or "token_type_ids" not in self.tokenizer.model_input_names:
            return features
        sep, mask = self.tokenizer.sep_token_id, features["attention_mask"]
        for i, row in enumerate(rows):
            if sep in row:
                start = int(mask[i].nonzero()[0]) + list(row).index(sep) + 1
                types[i, start : int(mask[i].nonzero()[-1]) + 1] = 1
        return features

    def tokenize_pairs(self, pairs: Sequence[tuple[str, str]]) -> Features:
        """Padded pair features, ready for `forward` (the path training uses)."""
        return self.pad(self.pair_ids(pairs))

    def get_config(self) -> dict[str, Any]:
        """sentence_bert_config.json: sentence-transformers' task fields plus the sequence limit."""
        return ST_TASK_CONFIG | super().get_config()

    def forward(self, features: Features) -> Features:
        """Add the logits (B, num_labels) as `sentence_embedding`, the slot the backends return."""
        inputs = {k: features[k] for k in self.model_inputs if k in features}
        features["sentence_embedding"] = self.auto_model(**inputs, return_dict=True).logits
        return features
