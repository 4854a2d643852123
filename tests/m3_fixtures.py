"""A tiny BGE-M3 folder in FlagEmbedding's layout: an XLM-R encoder, its tokenizer, colbert_linear.pt and
sparse_linear.pt (torch state dicts of the two Linear heads), optionally with sentence-transformers' files."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaModel

from tests.tiny_models import MAX_LEN, TINY, _byte_bpe


def build_m3(path: Path) -> Path:
    """The encoder (XLM-R, tiny) and both heads, seeded."""
    tok = _byte_bpe()
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
        cls_token="<s>", sep_token="</s>", mask_token="<mask>", model_max_length=MAX_LEN,
    )  # fmt: skip
    torch.manual_seed(11)
    config = XLMRobertaConfig(vocab_size=tok.get_vocab_size(), max_position_embeddings=MAX_LEN + 2, pad_token_id=1,
                              bos_token_id=0, eos_token_id=2, type_vocab_size=1, **TINY)  # fmt: skip
    path.mkdir(parents=True, exist_ok=True)
    XLMRobertaModel(config).save_pretrained(path)
    wrapped.save_pretrained(path)
    width = config.hidden_size
    torch.save(torch.nn.Linear(width, width).state_dict(), path / "colbert_linear.pt")
    torch.save(torch.nn.Linear(width, 1).state_dict(), path / "sparse_linear.pt")
    return path


def with_st_files(m3: Path, path: Path) -> Path:
    """The same folder as the published BGE-M3 ships it: sentence-transformers' CLS + normalize files too."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    encoder = Transformer(str(m3))
    SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension(), "cls"), Normalize()],
                        device="cpu").save(str(path))  # fmt: skip
    for head in ("colbert_linear.pt", "sparse_linear.pt"):
        shutil.copy(m3 / head, path / head)
    return path
