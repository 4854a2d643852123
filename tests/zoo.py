"""The model families of today's leaderboards as sentence-transformers 6.2 builds and saves them (tiny random weights).

Shared by tests/test_zoo.py (parity both ways and on every engine) and benchmarks/speed/zoo_table.py (the
family x engine table in docs/models.md). Each builder returns a SentenceTransformer in the module
chain its family publishes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer import modules as st
from tokenizers import Tokenizer
from torch import nn

from tests.tiny_models import BUILDERS, build_decoder, build_gemma3, build_t5

Builder = Callable[[Path], SentenceTransformer]


def _transformer(folder: Path) -> st.Transformer:
    return st.Transformer(str(folder))


def _encoder(kind: str, pooling: str, *, normalize: bool = False) -> Builder:
    def build(root: Path) -> SentenceTransformer:
        backbone = _transformer(BUILDERS[kind](root / kind))
        heads: list[nn.Module] = [st.Pooling(backbone.get_embedding_dimension(), pooling)]
        return SentenceTransformer(modules=[backbone, *heads, *([st.Normalize()] if normalize else [])], device="cpu")

    return build


def _labse(root: Path) -> SentenceTransformer:
    backbone = _transformer(BUILDERS["bert"](root / "bert"))
    width = backbone.get_embedding_dimension()
    dense = st.Dense(width, 24, activation_function=nn.Tanh())
    return SentenceTransformer(modules=[backbone, st.Pooling(width, "cls"), dense, st.Normalize()], device="cpu")


def _sentence_t5(root: Path) -> SentenceTransformer:
    backbone = _transformer(build_t5(root / "t5"))
    width = backbone.get_embedding_dimension()
    dense = st.Dense(width, 16, bias=False, activation_function=nn.Identity())
    return SentenceTransformer(modules=[backbone, st.Pooling(width, "mean"), dense, st.Normalize()], device="cpu")


def _decoder(family: str) -> Builder:
    def build(root: Path) -> SentenceTransformer:
        backbone = _transformer(build_decoder(root / family, family))  # left padding, EOS appended
        width = backbone.get_embedding_dimension()
        return SentenceTransformer(modules=[backbone, st.Pooling(width, "lasttoken"), st.Normalize()], device="cpu")

    return build


def _embeddinggemma(root: Path) -> SentenceTransformer:
    backbone = _transformer(build_gemma3(root / "gemma3", bidirectional=True, window=8))  # the window matters
    width = backbone.get_embedding_dimension()
    up = st.Dense(width, 48, bias=False, activation_function=nn.Identity())
    down = st.Dense(48, 20, bias=False, activation_function=nn.Identity())
    modules = [backbone, st.Pooling(width, "mean"), up, down, st.Normalize()]
    return SentenceTransformer(modules=modules, device="cpu")


def _layernorm(root: Path) -> SentenceTransformer:
    backbone = _transformer(BUILDERS["bert"](root / "bert"))
    width = backbone.get_embedding_dimension()
    norm = st.LayerNorm(width)
    with torch.no_grad():  # a fresh LayerNorm is the identity affine map: make it one a comparison can see
        norm.norm.weight.uniform_(0.5, 1.5)
        norm.norm.bias.uniform_(-0.5, 0.5)
    return SentenceTransformer(modules=[backbone, st.Pooling(width, "weightedmean"), norm], device="cpu")


def static_module(bert_dir: Path, dim: int) -> st.StaticEmbedding:
    """sentence-transformers' StaticEmbedding on the tiny BERT's tokenizer, random table."""
    tokenizer = Tokenizer.from_file(str(bert_dir / "tokenizer.json"))
    return st.StaticEmbedding(tokenizer, embedding_weights=torch.randn(tokenizer.get_vocab_size(), dim))


def _static(root: Path) -> SentenceTransformer:
    bert = BUILDERS["bert"](root / "bert")
    return SentenceTransformer(modules=[static_module(bert, 16), st.Normalize()], device="cpu")


def _router(root: Path) -> SentenceTransformer:
    """Static-embedding queries, transformer documents (static-retrieval / inference-free layouts)."""
    backbone = _transformer(BUILDERS["bert"](root / "bert"))
    width = backbone.get_embedding_dimension()
    router = st.Router.for_query_document(
        query_modules=[static_module(root / "bert", width)], document_modules=[backbone, st.Pooling(width, "mean")]
    )
    return SentenceTransformer(modules=[router, st.Normalize()], device="cpu")


FAMILIES: dict[str, Builder] = {
    "bert mean": _encoder("bert", "mean", normalize=True),
    "roberta cls": _encoder("roberta", "cls"),
    "albert max": _encoder("albert", "max"),
    "mean_sqrt_len_tokens": _encoder("bert", "mean_sqrt_len_tokens"),
    "weightedmean + LayerNorm": _layernorm,
    "LaBSE (cls, Dense tanh)": _labse,
    "sentence-t5 / GTR (T5 encoder, Dense)": _sentence_t5,
    "Qwen3-Embedding (qwen3 decoder, lasttoken)": _decoder("qwen3"),
    "gte-Qwen2 (qwen2 decoder, lasttoken)": _decoder("qwen2"),
    "e5-mistral (mistral decoder, lasttoken)": _decoder("mistral"),
    "llama decoder, lasttoken": _decoder("llama"),
    "EmbeddingGemma (Gemma3 bidirectional, 2 Dense)": _embeddinggemma,
    "StaticEmbedding": _static,
    "Router (static query, transformer document)": _router,
}


def build_family(name: str, root: Path) -> Path:
    """Build family `name` under `root` with sentence-transformers, save it, return the saved folder."""
    torch.manual_seed(0)
    model = FAMILIES[name](root)
    model.save(str(root / "saved"))
    return root / "saved"
