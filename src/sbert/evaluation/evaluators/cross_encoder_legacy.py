"""sentence-transformers' older cross-encoder evaluator names, kept by 6.2 as deprecated subclasses.

Each is the current evaluator it was folded into, plus `from_input_examples` (pairs in `texts`, the
gold value in `label`), and warns once when built, as 6.2's do.
"""

from __future__ import annotations

import warnings
from typing import Any

from sbert.evaluation.evaluators.cross_encoder import (
    CrossEncoderClassificationEvaluator,
    CrossEncoderCorrelationEvaluator,
    CrossEncoderRerankingEvaluator,
)


class _FromExamples:
    """`from_input_examples(examples, **kwargs)`: the pairs and gold values of InputExample objects."""

    @classmethod
    def from_input_examples(cls, examples: list[Any], **kwargs: Any) -> Any:
        """The evaluator of `examples`' texts (pairs) and labels."""
        return cls([list(e.texts) for e in examples], [e.label for e in examples], **kwargs)  # type: ignore[call-arg]


def _deprecated(old: str, new: type) -> None:
    warnings.warn(f"{old} is deprecated; use {new.__name__} (it takes the same inputs)", DeprecationWarning,
                  stacklevel=3)  # fmt: skip


class CEBinaryAccuracyEvaluator(_FromExamples, CrossEncoderClassificationEvaluator):
    """Deprecated: CrossEncoderClassificationEvaluator."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _deprecated(type(self).__name__, CrossEncoderClassificationEvaluator)
        super().__init__(*args, **kwargs)


class CEBinaryClassificationEvaluator(CEBinaryAccuracyEvaluator):
    """Deprecated: CrossEncoderClassificationEvaluator."""


class CEF1Evaluator(CEBinaryAccuracyEvaluator):
    """Deprecated: CrossEncoderClassificationEvaluator."""


class CESoftmaxAccuracyEvaluator(CEBinaryAccuracyEvaluator):
    """Deprecated: CrossEncoderClassificationEvaluator."""


class CECorrelationEvaluator(_FromExamples, CrossEncoderCorrelationEvaluator):
    """Deprecated: CrossEncoderCorrelationEvaluator."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _deprecated(type(self).__name__, CrossEncoderCorrelationEvaluator)
        super().__init__(*args, **kwargs)


class CERerankingEvaluator(CrossEncoderRerankingEvaluator):
    """Deprecated: CrossEncoderRerankingEvaluator."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _deprecated(type(self).__name__, CrossEncoderRerankingEvaluator)
        super().__init__(*args, **kwargs)
