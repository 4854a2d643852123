"""sentence-transformers 6.2's `sentence_transformers.cross_encoder` package paths, on sbert's pieces.

`CrossEncoder` is the drop-in class; `CrossEncoderTrainer`, `CrossEncoderTrainingArguments`, `.losses`,
`.evaluation`, `.trainer` and `.training_args` answer as there. sbert's own cross-encoder kind is
`sbert.reranker` (what `sbert.load`, the server and the index use).
"""

from sbert.compat.cross_encoder import CrossEncoder
from sbert.compat.cross_trainer import CrossEncoderTrainer, CrossEncoderTrainingArguments
from sbert.compat.model_card import CrossEncoderModelCardData

__all__ = ["CrossEncoder", "CrossEncoderModelCardData", "CrossEncoderTrainer", "CrossEncoderTrainingArguments"]
