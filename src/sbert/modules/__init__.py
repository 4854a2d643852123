"""The modules a SentenceEncoder chains, registered by the class name modules.json records."""

from __future__ import annotations

from sbert.errors import ModelFormatError
from sbert.modules.bag_of_words import BoW
from sbert.modules.base import Features, Module
from sbert.modules.chain import chain_widths
from sbert.modules.cnn import CNNHead
from sbert.modules.dense import Dense
from sbert.modules.layer_norm import LayerNorm
from sbert.modules.layer_pooling import WeightedLayerPooling
from sbert.modules.multi_vector_mask import MultiVectorMask
from sbert.modules.multimodal import ImageTextTransformer, MultimodalTransformer
from sbert.modules.ngram_cnn import NGramCNN
from sbert.modules.normalize import Normalize
from sbert.modules.poolers import POOLERS, build_pooler
from sbert.modules.pooling import Pooling
from sbert.modules.router import RouteError, Router
from sbert.modules.static_embedding import StaticEmbedding
from sbert.modules.transformer import Transformer
from sbert.modules.word_embeddings import WordEmbeddings
from sbert.modules.word_heads import CNN, LSTM, Dropout, WordWeights

# Keyed by class name: modules.json may say `sentence_transformers.models.Pooling`,
# `sentence_transformers.sentence_transformer.modules.pooling.Pooling` (6.x) or `sbert...Pooling`.
MODULES: dict[str, type[Module]] = {
    "Transformer": Transformer,
    "Pooling": Pooling,
    "Normalize": Normalize,
    "CNNHead": CNNHead,
    "NGramCNN": NGramCNN,
    "Dense": Dense,
    "LayerNorm": LayerNorm,
    "StaticEmbedding": StaticEmbedding,
    "Router": Router,
    "MultiVectorMask": MultiVectorMask,
    "Asym": Router,  # sentence-transformers' name for the Router before v5, same layout
    "CLIPModel": ImageTextTransformer,  # sentence-transformers 5.x's image-text layout (clip-ViT-B-32's 0_CLIPModel)
    # sentence-transformers' word-vector encoders (a word table, then optionally these, then Pooling)
    "WordEmbeddings": WordEmbeddings,
    "WordWeights": WordWeights,
    "CNN": CNN,
    "LSTM": LSTM,
    "Dropout": Dropout,
    "BoW": BoW,
    "WeightedLayerPooling": WeightedLayerPooling,
}

# What may start a chain: it turns texts into token ids (`token_ids`, `pad`) and its forward reads them.
InputModule = Transformer | StaticEmbedding | WordEmbeddings | BoW
INPUT_MODULES = (Transformer, StaticEmbedding, WordEmbeddings, BoW)
# The input modules that cut their inputs at a token limit, which the model's max_seq_length sets (static and
# bag-of-words tables have none).
LIMITED_INPUT_MODULES = (Transformer, WordEmbeddings)


def check_chain(modules: list[Module]) -> None:
    """Refuse a chain that does not start with an input module (or a Router of them) or whose widths do not fit."""
    first = modules[0] if modules else None
    routes = list(first.route_lists().values()) if isinstance(first, Router) else [modules[:1]]
    for route in routes:
        if not isinstance(route[0], INPUT_MODULES):
            raise ValueError(
                "a SentenceEncoder (and each Router route) must start with a Transformer, a StaticEmbedding, "
                "WordEmbeddings or a BoW, "
                f"not {type(route[0]).__name__}"
            )
        chain_widths([*route, *modules[1:]])  # refuses a head that does not fit the module before it


def module_class(type_name: str) -> type[Module]:
    """Find the class for a modules.json `type`, or fail naming the known ones."""
    name = type_name.rsplit(".", 1)[-1]
    cls = MODULES.get(name)
    if cls is None:
        raise ModelFormatError(f"unsupported module type {type_name!r}; known: {', '.join(MODULES)}")
    return cls


__all__ = [
    "CNN",
    "INPUT_MODULES",
    "LIMITED_INPUT_MODULES",
    "LSTM",
    "MODULES",
    "POOLERS",
    "BoW",
    "CNNHead",
    "Dense",
    "Dropout",
    "Features",
    "ImageTextTransformer",
    "InputModule",
    "LayerNorm",
    "Module",
    "MultiVectorMask",
    "MultimodalTransformer",
    "NGramCNN",
    "Normalize",
    "Pooling",
    "RouteError",
    "Router",
    "StaticEmbedding",
    "Transformer",
    "WeightedLayerPooling",
    "WordEmbeddings",
    "WordWeights",
    "build_pooler",
    "chain_widths",
    "check_chain",
    "module_class",
]
