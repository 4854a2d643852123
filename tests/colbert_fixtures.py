"""Tiny ColBERT folders: sentence-transformers 6's native layout (built with its own classes) and PyLate's.

PyLate itself pins an old sentence-transformers and a CUDA torch, so its layout is written here
file by file, as pylate/models/colbert.py saves it: [Q] / [D] added to the tokenizer, [MASK] as
the pad token, a `pylate.models.Dense.Dense` module and PyLate's keys in
config_sentence_transformers.json. sentence-transformers 6 loads that layout and is the reference.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import torch
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

from tests.tiny_models import CORPUS, TINY, wordpiece

# Punctuation in the training text so the skiplist's words are vocabulary tokens.
PUNCTUATED = [*CORPUS, "a man, a plan; a canal: panama!", "why? because (it is) so.", "dogs - cats & mice"]
MAX_LEN = 64
QUERIES = ["a man is playing", "the cat sat on the mat with a dog and a long tail running in the park today", "",
           "why, a dog?"]  # fmt: skip
DOCUMENTS = ["a man, is playing.", "cats", "the cat sat on the mat " * 10, "dogs run! in the park? (today)",
             "zebra quokka"]  # fmt: skip


def build_punctuated_bert(path: Path) -> Path:
    """A 2-layer, 32-wide BERT whose WordPiece vocabulary holds punctuation."""
    tok = wordpiece(PUNCTUATED, vocab_size=220)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", model_max_length=MAX_LEN,
    )  # fmt: skip
    torch.manual_seed(5)
    model = BertModel(BertConfig(vocab_size=tok.get_vocab_size(), max_position_embeddings=MAX_LEN, **TINY))
    model.save_pretrained(path)
    wrapped.save_pretrained(path)
    return path


def tiny_colbert(base: Path, **transformer_args: Any) -> Path:
    """The punctuated BERT under `base`, and a native ColBERT on it (`transformer_args` as build_native's)."""
    return build_native(build_punctuated_bert(base / "bert"), base / "colbert", **transformer_args)


def build_native(bert: Path, path: Path, **transformer_args: Any) -> Path:
    """A sentence-transformers 6 MultiVectorEncoder: prompts [Q] / [D], an 8-wide projection, a punctuation skiplist."""
    from sentence_transformers import MultiVectorEncoder
    from sentence_transformers.base.modules import Dense, Transformer
    from sentence_transformers.multi_vector_encoder.modules import MultiVectorMask
    from sentence_transformers.sentence_transformer.modules import Normalize
    from torch import nn

    skiplist = transformer_args.pop("skiplist", list(string.punctuation))
    prompts = transformer_args.pop("prompts", {"query": "[Q] ", "document": "[D] "})
    transformer = Transformer(str(bert), **transformer_args)
    torch.manual_seed(6)
    dense = Dense(32, 8, bias=False, activation_function=nn.Identity(), module_input_name="token_embeddings")
    modules = [
        transformer,
        dense,
        MultiVectorMask(skiplist_words=skiplist),
        Normalize(module_input_name="token_embeddings"),
    ]
    MultiVectorEncoder(modules=modules, device="cpu", prompts=prompts).save(str(path))
    return path


def build_pylate(bert: Path, path: Path, **keys: Any) -> Path:
    """A ColBERT folder as PyLate saves it (its defaults unless `keys` override them)."""
    from safetensors.torch import save_file
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(bert)
    tokenizer.add_tokens(["[Q] ", "[D] "])  # as PyLate does: plain added tokens, their trailing space included
    tokenizer.pad_token = tokenizer.mask_token
    model = BertModel.from_pretrained(bert)
    model.resize_token_embeddings(len(tokenizer))
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    config = {"query_prefix": "[Q] ", "document_prefix": "[D] ", "query_length": 16, "document_length": 24,
              "attend_to_expansion_tokens": False, "skiplist_words": list(string.punctuation),
              "do_query_expansion": True, **keys}  # fmt: skip
    _write(
        path / "sentence_bert_config.json", {"max_seq_length": config["document_length"] - 1, "do_lower_case": False}
    )
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Dense", "type": "pylate.models.Dense.Dense"}]  # fmt: skip
    _write(path / "modules.json", modules)
    (path / "1_Dense").mkdir()
    _write(path / "1_Dense" / "config.json", {"in_features": 32, "out_features": 8, "bias": False,
           "activation_function": "torch.nn.modules.linear.Identity", "use_residual": False})  # fmt: skip
    torch.manual_seed(7)
    save_file({"linear.weight": torch.randn(8, 32) / 6}, str(path / "1_Dense" / "model.safetensors"))
    versions = {"sentence_transformers": "5.3.0", "transformers": "4.57.0", "pytorch": "2.8.0"}
    _write(path / "config_sentence_transformers.json", {"__version__": versions, "prompts": {},
           "default_prompt_name": None, "similarity_fn_name": "MaxSim", "model_type": "ColBERT", **config})  # fmt: skip
    return path


def _write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2))


def build_stanford(bert: Path, path: Path, **metadata: Any) -> Path:
    """A Stanford ColBERT checkpoint: config.json naming HF_ColBERT, `bert.*` weights plus `linear.weight`,
    and artifact.metadata (query_maxlen 16, doc_maxlen 24 unless `metadata` says otherwise)."""
    from safetensors.torch import save_file
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(bert)
    tokenizer.add_tokens(["[unused0]", "[unused1]"], special_tokens=True)  # BERT's vocabulary holds both
    model = BertModel.from_pretrained(bert)
    model.resize_token_embeddings(len(tokenizer))
    model.config.architectures = ["HF_ColBERT"]
    path.mkdir(parents=True)
    model.config.save_pretrained(path)
    tokenizer.save_pretrained(path)
    torch.manual_seed(8)
    weights = {f"bert.{k}": v.contiguous() for k, v in model.state_dict().items()} | {
        "linear.weight": torch.randn(8, 32) / 6
    }
    save_file(weights, str(path / "model.safetensors"))
    meta = {"query_token_id": "[unused0]", "doc_token_id": "[unused1]", "query_maxlen": 16, "doc_maxlen": 24,
            "mask_punctuation": True, "attend_to_mask_tokens": False, **metadata}  # fmt: skip
    _write(path / "artifact.metadata", meta)
    return path
