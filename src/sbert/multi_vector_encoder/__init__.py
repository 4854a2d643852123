"""sentence-transformers 6.2's `sentence_transformers.multi_vector_encoder` package paths, on sbert's pieces.

`MultiVectorEncoder` is the drop-in class; `.losses` holds 6.2's ColBERT losses, and the trainer and its
arguments answer as there.
"""

from sbert.compat import MultiVectorEncoder
from sbert.compat.model_card import MultiVectorEncoderModelCardData
from sbert.compat.multi_vector_trainer import MultiVectorEncoderTrainer
from sbert.compat.training_args import MultiVectorEncoderTrainingArguments
from sbert.util import maxsim, maxsim_pairwise

__all__ = ["MultiVectorEncoder", "MultiVectorEncoderModelCardData", "MultiVectorEncoderTrainer",
           "MultiVectorEncoderTrainingArguments", "maxsim", "maxsim_pairwise"]  # fmt: skip
