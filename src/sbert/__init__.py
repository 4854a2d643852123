"""sbert: Sentence-BERT sentence embeddings (library, CLI and server).

    import sbert

    model = sbert.load("all-MiniLM-L6-v2")          # any kind: dense, sparse, multi-vector, cross-encoder, static
    docs = ["A man is eating food.", "A man is riding a horse."]
    scores = model.similarity(model.encode_query(["who is having lunch?"]), model.encode_document(docs))
    print(docs[int(scores.argmax())])

`sbert --help` lists the command line; docs/library.md the whole API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sbert.legacy_paths import install as _install_legacy_paths
from sbert.version import __version__

_install_legacy_paths()  # sentence-transformers' legacy module paths, under sbert. (sbert/legacy_paths.py)

if TYPE_CHECKING:
    from sbert.compat import CrossEncoder, MultiVectorEncoder, SentenceTransformer, SparseEncoder
    from sbert.compat.cross_trainer import CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sbert.compat.model_card import (
        CrossEncoderModelCardData,
        MultiVectorEncoderModelCardData,
        SentenceTransformerModelCardData,
        SparseEncoderModelCardData,
    )
    from sbert.compat.multi_vector_trainer import MultiVectorEncoderTrainer
    from sbert.compat.sparse_trainer import SparseEncoderTrainer, SparseEncoderTrainingArguments
    from sbert.compat.trainer import SentenceTransformerTrainer
    from sbert.compat.training_args import MultiVectorEncoderTrainingArguments, SentenceTransformerTrainingArguments
    from sbert.data.examples import InputExample, ParallelSentencesDataset, SentencesDataset
    from sbert.dense.model import SentenceEncoder
    from sbert.model_kind import load
    from sbert.progress import LoggingHandler
    from sbert.search.mine_table import mine_hard_negatives
    from sbert.similarity import SimilarityFunction
    from sbert.static import StaticEncoder
    from sbert.training.api import train
    from sbert.util import quantize_embeddings
    from sbert.util_dataset import resolve_ids


# sentence-transformers' training names (sbert/compat): `from sbert import SentenceTransformerTrainer, ...`.
_DROP_IN = {
    "InputExample": "sbert.data.examples",
    "ParallelSentencesDataset": "sbert.data.examples",
    "SentencesDataset": "sbert.data.examples",
    "LoggingHandler": "sbert.progress",
    "mine_hard_negatives": "sbert.search.mine_table",
    "quantize_embeddings": "sbert.util",
    "resolve_ids": "sbert.util_dataset",
    "CrossEncoderModelCardData": "sbert.compat.model_card",
    "MultiVectorEncoderModelCardData": "sbert.compat.model_card",
    "SentenceTransformerModelCardData": "sbert.compat.model_card",
    "SparseEncoderModelCardData": "sbert.compat.model_card",
    "CrossEncoderTrainer": "sbert.compat.cross_trainer",
    "CrossEncoderTrainingArguments": "sbert.compat.cross_trainer",
    "SentenceTransformerTrainer": "sbert.compat.trainer",
    "SentenceTransformerTrainingArguments": "sbert.compat.training_args",
    "SimilarityFunction": "sbert.similarity",
    "SparseEncoderTrainer": "sbert.compat.sparse_trainer",
    "MultiVectorEncoderTrainer": "sbert.compat.multi_vector_trainer",
    "MultiVectorEncoderTrainingArguments": "sbert.compat.training_args",
    "SparseEncoderTrainingArguments": "sbert.compat.sparse_trainer",
}


# sentence-transformers 6.2's module paths that scripts reach as attributes of the package.
_DROP_IN_MODULES = ("datasets", "models", "readers")


def __getattr__(name: str) -> Any:
    # Imported on first use so `sbert --help` and `import sbert` need not load torch.
    if name in _DROP_IN:
        import importlib

        return getattr(importlib.import_module(_DROP_IN[name]), name)
    if name in _DROP_IN_MODULES:  # `sbert.models.Transformer(...)` after a bare `import sbert`, as 6.2 allows
        import importlib

        return importlib.import_module(f"sbert.{name}")
    if name == "SentenceEncoder":
        from sbert.dense.model import SentenceEncoder

        return SentenceEncoder
    if name == "load":
        from sbert.model_kind import load

        return load
    if name == "CrossEncoder":  # sentence-transformers' conventions on sbert's class (sbert/compat)
        from sbert.compat import CrossEncoder

        return CrossEncoder
    if name == "train":
        from sbert.training.api import train

        return train
    if name == "SparseEncoder":  # sentence-transformers' conventions on sbert's class (sbert/compat)
        from sbert.compat import SparseEncoder

        return SparseEncoder
    if name == "MultiVectorEncoder":  # sentence-transformers' conventions on sbert's class (sbert/compat)
        from sbert.compat import MultiVectorEncoder

        return MultiVectorEncoder
    if name == "SentenceTransformer":
        from sbert.compat import SentenceTransformer

        return SentenceTransformer
    if name == "StaticEncoder":
        from sbert.static import StaticEncoder

        return StaticEncoder
    raise AttributeError(f"module 'sbert' has no attribute {name!r}")


def __dir__() -> list[str]:
    # The lazy names above are attributes too: dir(sbert) and tab completion list them, and only the API
    # (not this module's own imports, such as Any and TYPE_CHECKING).
    return sorted({*__all__, "__version__"})


__all__ = [
    "CrossEncoder",
    "CrossEncoderModelCardData",
    "CrossEncoderTrainer",
    "CrossEncoderTrainingArguments",
    "InputExample",
    "LoggingHandler",
    "MultiVectorEncoder",
    "MultiVectorEncoderModelCardData",
    "MultiVectorEncoderTrainer",
    "MultiVectorEncoderTrainingArguments",
    "ParallelSentencesDataset",
    "SentenceEncoder",
    "SentenceTransformer",
    "SentenceTransformerModelCardData",
    "SentenceTransformerTrainer",
    "SentenceTransformerTrainingArguments",
    "SentencesDataset",
    "SimilarityFunction",
    "SparseEncoder",
    "SparseEncoderModelCardData",
    "SparseEncoderTrainer",
    "SparseEncoderTrainingArguments",
    "StaticEncoder",
    "__version__",
    "load",
    "mine_hard_negatives",
    "quantize_embeddings",
    "resolve_ids",
    "train",
]
