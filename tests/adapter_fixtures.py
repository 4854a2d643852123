"""Adapter fixtures built by the reference libraries: a sentence-transformers base and PEFT adapters on it."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer

TEXTS = ["a man is playing a guitar", "the cat sat on the mat", "dogs run in the park today", "a"]


def st_base(raw_dir: Path, path: Path) -> Path:
    """A sentence-transformers model (Transformer + mean pooling) saved by sentence-transformers itself."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules as st_modules

    transformer = st_modules.Transformer(str(raw_dir))
    pooling = st_modules.Pooling(transformer.get_embedding_dimension(), "mean")
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(path))
    return path


def peft_adapter(base: Path, path: Path, targets: list[str], seed: int = 0, r: int = 4) -> Path:
    """A PEFT LoRA adapter on `base` with random non-zero B matrices, saved by PEFT in `path`."""
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(seed)
    config = LoraConfig(r=r, lora_alpha=2 * r, target_modules=targets, init_lora_weights=False)
    model = get_peft_model(AutoModel.from_pretrained(str(base)), config)
    model.peft_config["default"].base_model_name_or_path = str(base)
    model.save_pretrained(str(path))
    return path


def st_layout_adapter(base: Path, path: Path, targets: list[str], seed: int = 0) -> Path:
    """The layout sentence-transformers saves after add_adapter: the base's files less its weights, plus the adapter."""
    shutil.copytree(base, path)
    for name in ("config.json", "model.safetensors"):
        (path / name).unlink()
    return peft_adapter(base, path, targets, seed)


def peft_vectors(base: Path, adapter: Path, texts: list[str] = TEXTS) -> np.ndarray:
    """Mean-pooled vectors of PEFT's own PeftModel (base + adapter): the reference."""
    from peft import PeftModel

    model = PeftModel.from_pretrained(AutoModel.from_pretrained(str(base)), str(adapter)).eval()
    return hf_mean(model, AutoTokenizer.from_pretrained(str(base)), texts)


def hf_mean(model: torch.nn.Module, tokenizer: object, texts: list[str]) -> np.ndarray:
    """Masked mean of a Hugging Face model's last hidden state."""
    batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")  # type: ignore[operator]
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    return ((hidden * mask).sum(1) / mask.sum(1)).numpy()
