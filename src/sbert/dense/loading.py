"""Rebuild a model folder's module chain (finding the folder: sbert/model_dirs.py)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import torch

from sbert.adapters.peft_io import is_adapter_dir
from sbert.errors import ModelFormatError
from sbert.formats.layout import MODULES_FILE, SPARSE_MODULES, ModuleEntry, read_modules
from sbert.modules import Module, Pooling, Router, Transformer, module_class
from sbert.modules.multimodal import MultimodalTransformer, is_multimodal, load_input_module

log = logging.getLogger(__name__)


def load_modules(root: Path, trust_remote_code: bool = False, dtype: str | torch.dtype | None = None) -> list[Module]:
    """Rebuild the chain: from modules.json, or Transformer + mean pooling for a plain encoder.

    The encoder's weights load in `dtype` (None: fp32, whatever the file stores); heads are fp32.
    """
    if not (root / MODULES_FILE).is_file():
        if is_adapter_dir(root):  # a bare PEFT adapter folder: its base model plus mean pooling
            log.warning("%s has no %s: using its adapter's base encoder with mean pooling", root, MODULES_FILE)
            transformer = Transformer.from_adapter(root, trust_remote_code=trust_remote_code, dtype=dtype)
            return [transformer, Pooling(transformer.embedding_dimension, "mean")]
        if not (root / "config.json").is_file():
            raise ModelFormatError(f"{root}: neither {MODULES_FILE} nor a Hugging Face config.json")
        if is_multimodal(root, None):  # a plain CLIP, SigLIP, BLIP, CLAP or VLM checkpoint
            module = MultimodalTransformer.from_pretrained(root, trust_remote_code=trust_remote_code, dtype=dtype)
            if not module.token_output:  # the towers give the vectors
                return [module]
            log.warning("%s has no %s: pooling its token states by their mean (6.3's default)", root, MODULES_FILE)
            return [module, Pooling(module.embedding_dimension, "mean")]
        log.warning("%s has no %s: using it as a plain encoder with mean pooling", root, MODULES_FILE)
        transformer = Transformer.from_pretrained(root, trust_remote_code=trust_remote_code, dtype=dtype)
        return [transformer, Pooling(transformer.embedding_dimension, "mean")]

    entries = read_modules(root)
    sparse = [e.class_name for e in entries if e.class_name in SPARSE_MODULES]
    if sparse:
        raise ModelFormatError(f"{root}: a sparse model ({', '.join(sparse)}): load it with sbert.SparseEncoder")
    if any(e.class_name == "MultiVectorMask" or e.type.startswith("pylate.") for e in entries):
        raise ModelFormatError(f"{root}: a multi-vector (ColBERT) model: load it with sbert.MultiVectorEncoder")
    return load_entries(root, entries, trust_remote_code, dtype)


def load_entries(
    root: Path, entries: list[ModuleEntry], trust_remote_code: bool = False, dtype: str | torch.dtype | None = None
) -> list[Module]:
    """The modules `entries` (of root's modules.json) name, each loaded from its folder by its class's rules."""

    def load_one(type_name: str, folder: Path) -> Module:
        cls = module_class(type_name)
        if cls is Transformer:  # a text encoder, or an image-text model's towers (modules/multimodal.py)
            return load_input_module(folder, trust_remote_code=trust_remote_code, dtype=dtype)
        if cls is MultimodalTransformer:  # sentence-transformers 5.x's CLIPModel module
            return MultimodalTransformer.load(folder, trust_remote_code=trust_remote_code, dtype=dtype)
        if cls is Router:  # its routes' modules load by the same rules (remote code, dtype)
            return Router.load_routes(folder, load_one)
        return cls.load(folder)

    modules = [load_one(entry.type, root / entry.path) for entry in entries]
    if not modules:
        raise ModelFormatError(f"{root / MODULES_FILE}: lists no modules")
    return modules


def load_held(
    root: Path, trust_remote_code: bool, dtype: str | torch.dtype | None, device: torch.device
) -> list[Module]:
    """The folder's modules with their weights held in `dtype` (None: fp32; "auto": as stored; "int8": Linears).

    bf16 / fp16 and int8 load file-mapped as stored and convert tensor by tensor, so no full fp32 copy
    is ever resident; every Transformer of the chain is cast (a Router's routes too), heads stay fp32.
    """
    from sbert.backends.pages import cast_parameters
    from sbert.modules.transformer import load_dtype

    wanted = None if dtype == "int8" else load_dtype(dtype)  # the one reader of dtype names (and its error)
    half = wanted if wanted in (torch.float16, torch.bfloat16) else None
    as_stored = dtype == "int8" or half is not None
    modules = load_modules(root, trust_remote_code=trust_remote_code, dtype="auto" if as_stored else dtype)
    if dtype == "int8":
        from sbert.backends.torch_int8 import hold_int8

        hold_int8(modules, device)
    elif half is not None:
        for transformer in (t for m in modules for t in m.modules() if isinstance(t, Transformer)):
            cast_parameters(transformer, half)
    return modules


def new_chain(
    root: Path, pooling: str | list[str], normalize: bool, max_seq_length: int | None,
    dtype: str | torch.dtype | None, dense: Sequence[str],
) -> list[Module]:  # fmt: skip
    """A Hugging Face encoder plus a new head: pooling (any mode, cnn, ngram-cnn), Dense layers, Normalize."""
    from sbert.modules import Normalize, build_pooler
    from sbert.modules.chain import dense_heads

    transformer = Transformer.from_pretrained(root, max_seq_length=max_seq_length, dtype=dtype)
    modules: list[Module] = [transformer, *build_pooler(pooling, transformer.embedding_dimension)]
    modules += dense_heads(modules, dense)
    if normalize:
        modules.append(Normalize())
    return modules
