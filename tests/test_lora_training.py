"""Training with LoRA: every family and objective, the flag and recipe forms, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder, train
from sbert.adapters import LoraSpec, choose_targets, parse_lora
from sbert.errors import ModelFormatError, ModelNotFoundError, SbertError
from sbert.training.lora import add_lora
from tests.adapter_fixtures import TEXTS, peft_adapter, st_base
from tests.cli_runner import run_cli
from tests.tiny_models import CORPUS, build_decoder, build_gemma3, build_t5

pytest.importorskip("peft")
SHIFTED = CORPUS[1:] + CORPUS[:1]
LABELS = ["entailment", "neutral", "contradiction"] * 2 + ["neutral", "entailment"]
TABLES = {
    "mnrl": {"anchor": CORPUS, "positive": SHIFTED},
    "cached-mnrl": {"anchor": CORPUS, "positive": SHIFTED},
    "cosent": {"anchor": CORPUS, "positive": SHIFTED, "score": [i / 8 for i in range(8)]},
    "regression": {"anchor": CORPUS, "positive": SHIFTED, "score": [i / 8 for i in range(8)]},
    "classification": {"anchor": CORPUS, "positive": SHIFTED, "label": LABELS},
    "triplet": {"anchor": CORPUS, "positive": SHIFTED, "negative": CORPUS[2:] + CORPUS[:2]},
    "infomax": {"anchor": CORPUS},
}
TARGETS = {"bert": ["query", "key", "value"], "roberta": ["query", "key", "value"], "albert": ["query", "key", "value"],
           "qwen3": ["q_proj", "k_proj", "v_proj", "o_proj"], "gemma3": ["q_proj", "k_proj", "v_proj", "o_proj"],
           "t5": ["q", "k", "v", "o"]}  # fmt: skip


def lora_b_moved(model: SentenceEncoder) -> bool:
    return any(p.abs().sum() > 0 for name, p in model.named_parameters() if "lora_B" in name)


@pytest.fixture(scope="module")
def family_dirs(tiny_dirs, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("families")
    built = {"qwen3": build_decoder(root / "qwen3", "qwen3"), "gemma3": build_gemma3(root / "gemma3"),
             "t5": build_t5(root / "t5")}  # fmt: skip
    return {**tiny_dirs, **built}


@pytest.mark.parametrize("family", sorted(TARGETS))
def test_every_family_trains_its_attention_projections(family, family_dirs, tmp_path):
    pooling = "lasttoken" if family == "qwen3" else "mean"
    model = SentenceEncoder.from_transformer(family_dirs[family], pooling, device="cpu")
    assert choose_targets(model.transformer.auto_model, LoraSpec()) == TARGETS[family]
    before = model.encode(TEXTS)
    train(model, str(tmp_path / "out"), {"pairs": TABLES["mnrl"]}, {"pairs": "mnrl"}, lora="r=4", lr=1e-2,
          max_steps=2, batch_size=4, show_progress=False)  # fmt: skip
    assert lora_b_moved(model) and np.abs(model.encode(TEXTS) - before).max() > 0
    assert (tmp_path / "out" / "adapter_model.safetensors").is_file()


@pytest.mark.parametrize("objective", sorted(TABLES))
def test_every_objective_trains_an_adapter(objective, tiny_dirs, tmp_path):
    pooling = "ngram-cnn" if objective == "infomax" else "mean"  # IS-BERT's head is built fresh, so it trains
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], pooling, device="cpu")
    head = [p.clone() for p in model[1].parameters()]
    train(model, str(tmp_path / "out"), {"set": TABLES[objective]}, {"set": objective}, lora="r=4", lr=1e-2,
          max_steps=2, batch_size=4, show_progress=False)  # fmt: skip
    assert lora_b_moved(model)
    if head:  # the fresh head trained beside the adapter ("heads=auto")
        assert any(not torch.equal(a, b) for a, b in zip(head, model[1].parameters(), strict=True))
    assert SentenceEncoder.load(tmp_path / "out").transformer.has_adapter


def test_cli_flags_and_recipe_table(tiny_dirs, tmp_path):
    base = st_base(tiny_dirs["bert"], tmp_path / "base")
    data = tmp_path / "pairs.csv"
    data.write_text("anchor,positive\n" + "\n".join(f"{a},{b}" for a, b in zip(CORPUS, SHIFTED, strict=True)) + "\n")
    out = tmp_path / "cli"
    result = run_cli("train", "--model", str(base), "--objective", "mnrl", "--train", f"csv:{data}", "--output",
                     str(out), "--lora", "r=2,alpha=4,targets=query,value", "--gradient-checkpointing",
                     "--max-steps", "2", "--batch-size", "4", "--no-progress")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "LoRA r=2 alpha=4 dropout=0 on query, value of BertModel" in result.stderr
    saved = json.loads((out / "adapter_config.json").read_text())
    assert (saved["r"], saved["lora_alpha"], sorted(saved["target_modules"])) == (2, 4, ["query", "value"])
    recipe = tmp_path / "recipe.toml"
    stage = f'[[stage]]\nobjective = "mnrl"\ntrain = "csv:{data}"\nbatch_size = 4\nmax_steps = 2\n'
    recipe.write_text(f'model = "{base}"\noutput = "toml"\nmax_steps = 0\n[lora]\nr = 3\ntargets = ["key"]\n{stage}')
    result = run_cli("train", "--config", str(recipe), "--no-progress")
    assert result.returncode != 0 and "unknown keys ['max_steps']" in result.stderr  # run keys are checked
    recipe.write_text(recipe.read_text().replace("max_steps = 0\n", "", 1))
    assert run_cli("train", "--config", str(recipe), "--no-progress").returncode == 0
    saved = json.loads((tmp_path / "toml" / "adapter_config.json").read_text())
    assert (saved["r"], saved["target_modules"]) == (3, ["key"])


def test_parse_lora_forms_and_errors():
    assert parse_lora("r=8,targets=q,v,dropout=0.1") == LoraSpec(8, 16.0, 0.1, ("q", "v"))
    assert parse_lora({"r": 4, "alpha": 8, "targets": ["query"]}) == LoraSpec(4, 8.0, 0.0, ("query",))
    for bad, message in [("r=0", "r=0: must be >= 1"), ("rank=4", "unknown key 'rank'"), ("r=x", "lora 'r=x'"),
                         ("heads=some", "heads='some'"), ("dropout=1", "dropout=1.0")]:  # fmt: skip
        with pytest.raises(SbertError, match=message):
            parse_lora(bad)


def test_bad_input_is_one_line(tiny_dirs, tmp_path):
    from tokenizers import Tokenizer

    from sbert.modules import StaticEmbedding

    tokenizer = Tokenizer.from_file(str(tiny_dirs["bert"] / "tokenizer.json"))
    static = SentenceEncoder([StaticEmbedding(tokenizer, torch.randn(tokenizer.get_vocab_size(), 8))])
    with pytest.raises(SbertError, match="--lora needs a transformer model; this one starts with StaticEmbedding"):
        add_lora(static, LoraSpec())
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    with pytest.raises(SbertError, match=r"targets=q_proj: BertModel has no such Linear module; it has dense, key,"):
        add_lora(model, parse_lora("targets=q_proj"))
    add_lora(model, LoraSpec())
    with pytest.raises(SbertError, match="already has an adapter"):
        add_lora(model, LoraSpec())
    base = st_base(tiny_dirs["bert"], tmp_path / "base")
    adapter = peft_adapter(base, tmp_path / "adapter", ["query"])
    config = json.loads((adapter / "adapter_config.json").read_text())
    (adapter / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": "/no/such/base"}))
    with pytest.raises(ModelNotFoundError, match=r"base model '/no/such/base' not found \(tried local directory"):
        SentenceEncoder.load(adapter)
    wide = tmp_path / "wide"  # a base of another width: the adapter's matrices cannot fit it
    from transformers import BertConfig, BertModel

    BertModel(BertConfig(vocab_size=126, hidden_size=48, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64)).save_pretrained(wide)  # fmt: skip
    (adapter / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": str(wide)}))
    with pytest.raises(ModelFormatError, match=rf"adapter does not fit the base model {wide} \(size mismatch for"):
        SentenceEncoder.load(adapter)
    out = tmp_path / "merged"
    result = run_cli("merge-adapter", str(base), str(out))
    assert result.returncode != 0 and f"{base}: holds no LoRA adapter to merge" in result.stderr
    assert not out.exists()  # nothing half-written
