"""LoRA adapters: PEFT's and sentence-transformers' layout both ways, training, merging, switching, bad input."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest
import torch
from packaging.version import Version

from sbert import SentenceEncoder, train
from sbert.errors import SbertError
from tests.adapter_fixtures import TEXTS, peft_adapter, peft_vectors, st_base, st_layout_adapter
from tests.cli_runner import run_cli
from tests.tiny_models import CORPUS

pytest.importorskip("peft")
PAIRS = {"anchor": CORPUS, "positive": CORPUS[1:] + CORPUS[:1]}
CLOSE = {"rtol": 1e-5, "atol": 1e-6}


@pytest.fixture(scope="module")
def base(tiny_dirs, tmp_path_factory) -> Path:
    return st_base(tiny_dirs["bert"], tmp_path_factory.mktemp("lora") / "base")


@pytest.fixture(scope="module")
def trained(base, tmp_path_factory) -> Path:
    """An adapter sbert trained (4 MNRL steps at a high rate, so B moves well away from zero)."""
    out = tmp_path_factory.mktemp("lora") / "trained"
    train(str(base), str(out), {"pairs": PAIRS}, {"pairs": "mnrl"}, lora="r=4,alpha=8", lr=1e-2, max_steps=4,
          batch_size=4, show_progress=False)  # fmt: skip
    return out


def test_sentence_transformers_layout_adapter_gives_peft_vectors(base, tmp_path):
    adapter = st_layout_adapter(base, tmp_path / "st-adapter", ["query", "value"])
    want = peft_vectors(base, adapter)
    assert np.abs(SentenceEncoder.load(base).encode(TEXTS) - want).max() > 1e-3  # the adapter changes the vectors
    model = SentenceEncoder.load(adapter)
    np.testing.assert_allclose(model.encode(TEXTS), want, **CLOSE)
    np.testing.assert_allclose(model.encode(TEXTS, backend="onnx"), want, rtol=1e-4, atol=1e-5)  # merged for export
    assert model.transformer.has_adapter  # the export merged a copy, not the model
    bare = peft_adapter(base, tmp_path / "bare", ["query", "key"], seed=3)  # PeftModel.save_pretrained alone
    np.testing.assert_allclose(SentenceEncoder.load(bare).encode(TEXTS), peft_vectors(base, bare), **CLOSE)


def test_trained_adapter_is_saved_alone_and_loads_in_peft(base, trained):
    names = {p.name for p in trained.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors", "modules.json"} <= names
    assert not names & {"model.safetensors", "config.json"}  # the base weights stay where they are
    assert json.loads((trained / "adapter_config.json").read_text())["base_model_name_or_path"] == str(base)
    assert "LoRA adapter (r=4,alpha=8,dropout=0,heads=auto)" in (trained / "README.md").read_text()
    ours = SentenceEncoder.load(trained).encode(TEXTS)
    np.testing.assert_allclose(ours, peft_vectors(base, trained), **CLOSE)
    assert np.abs(ours - SentenceEncoder.load(base).encode(TEXTS)).max() > 1e-4  # training moved the adapter
    stage = json.loads((Path(trained) / "train_log.jsonl").read_text().splitlines()[0])
    lora = 3 * 2 * 4 * (32 + 32)  # query/key/value x 2 layers x r=4 x (A: 32 in + B: 32 out)
    assert stage["trainable_parameters"] == lora < stage["total_parameters"]


def test_only_the_adapter_trains(base, tmp_path):
    model = SentenceEncoder.load(base)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    train(model, str(tmp_path / "out"), {"pairs": PAIRS}, {"pairs": "mnrl"}, lora="r=4", lr=1e-2, max_steps=3,
          batch_size=4, show_progress=False)  # fmt: skip
    after = model.state_dict()
    changed = {k.rsplit(".", 2)[-3] if "lora_" in k else k for k in after if "lora_B" in k or k in before}
    moved = [k for k in after if k in before or "base_layer" in k]
    for key in moved:
        plain = key.replace("base_model.model.", "").replace(".base_layer", "")
        if plain in before:
            torch.testing.assert_close(after[key], before[plain], rtol=0, atol=0)
    assert changed and any(after[k].abs().sum() > 0 for k in after if "lora_B" in k)


@pytest.mark.skipif(
    Version(version("peft")) < Version("0.22"),
    reason="sentence-transformers loads adapters through "
    "transformers 5's PEFT integration, which needs peft >= 0.22 (the index here has 0.21.2)",
)
def test_sentence_transformers_loads_the_trained_adapter(trained):  # pragma: no cover - needs peft >= 0.22
    from sentence_transformers import SentenceTransformer

    want = SentenceEncoder.load(trained).encode(TEXTS)
    np.testing.assert_allclose(SentenceTransformer(str(trained), device="cpu").encode(TEXTS), want, **CLOSE)


def test_merge_adapter_writes_a_plain_model_with_equal_vectors(base, trained, tmp_path):
    want = SentenceEncoder.load(trained).encode(TEXTS)
    result = run_cli("merge-adapter", str(trained), str(tmp_path / "merged"))
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "merged" / "adapter_config.json").exists()
    merged = SentenceEncoder.load(tmp_path / "merged")
    assert not merged.transformer.has_adapter
    np.testing.assert_allclose(merged.encode(TEXTS), want, rtol=1e-5, atol=1e-5)
    vectors = tmp_path / "v.npy"
    encoded = run_cli(
        "encode", "--model", str(trained), "--input", "-", "--output", str(vectors), stdin="\n".join(TEXTS)
    )
    assert encoded.returncode == 0, encoded.stderr  # encode (like serve) merges once after loading
    np.testing.assert_allclose(np.load(vectors), want, rtol=1e-5, atol=1e-5)
    model = SentenceEncoder.load(trained)
    model.save(tmp_path / "merged-api", merge_adapter=True)
    assert model.transformer.has_adapter  # saving merged leaves the model's adapter in place
    np.testing.assert_allclose(SentenceEncoder.load(tmp_path / "merged-api").encode(TEXTS), want, rtol=1e-5, atol=1e-5)


def test_several_adapters_switch_by_name(base, tmp_path, caplog):
    first = st_layout_adapter(base, tmp_path / "one", ["query", "value"], seed=1)
    second = peft_adapter(base, tmp_path / "two", ["query", "value"], seed=2)
    model = SentenceEncoder.load(first)
    one = model.encode(TEXTS)
    np.testing.assert_allclose(model.encode(TEXTS, backend="onnx"), one, rtol=1e-4, atol=1e-5)  # fills the cache
    model.load_adapter(second, "two")
    want = peft_vectors(base, second)
    np.testing.assert_allclose(model.encode(TEXTS), want, **CLOSE)
    np.testing.assert_allclose(model.encode(TEXTS, backend="onnx"), want, rtol=1e-4, atol=1e-5)  # not the cached graph
    model.set_adapter("default")  # the same state dict as with "two" active: the graph cache must still tell
    np.testing.assert_allclose(model.encode(TEXTS), one, **CLOSE)
    np.testing.assert_allclose(model.encode(TEXTS, backend="onnx"), one, rtol=1e-4, atol=1e-5)
    assert "exporting again" not in caplog.text  # each graph was exported for its own adapter, never mistaken
    model.set_adapter("two")
    model.save(tmp_path / "saved")  # the active adapter is the one written
    np.testing.assert_allclose(peft_vectors(base, tmp_path / "saved"), peft_vectors(base, second), **CLOSE)
    with pytest.raises(SbertError, match="no adapter named 'three'; loaded: default, two"):
        model.set_adapter("three")


def test_gradient_checkpointing_gives_the_same_gradients(base):
    from sbert.adapters import parse_lora
    from sbert.training.lora import add_lora, enable_checkpointing

    grads = []
    for checkpointing in (False, True):
        model = SentenceEncoder.load(base)
        torch.manual_seed(0)  # the same A matrices both times
        add_lora(model, parse_lora("r=4"))
        if checkpointing:
            enable_checkpointing(model)
        model.train()
        with torch.no_grad():  # B starts at zero: give it values so A gets a gradient too
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.copy_(torch.linspace(-0.1, 0.1, p.numel()).view_as(p))
        torch.manual_seed(0)  # the same dropout masks both times (checkpointing replays the RNG state)
        model(model.tokenize(TEXTS))["sentence_embedding"].pow(2).sum().backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad})
    assert grads[0].keys() == grads[1].keys() and grads[0]
    for name, grad in grads[0].items():
        torch.testing.assert_close(grads[1][name], grad, rtol=1e-5, atol=1e-6)
