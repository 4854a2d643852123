"""The weights state key: every writer moves it, so no cache (cast copy, digest, "unchanged since load")
outlives the weights it was built from. Fused AdamW is what CUDA training runs; it also runs on the CPU."""

import numpy as np
import torch
from torch.utils.weak import WeakIdKeyDictionary

from sbert import SentenceEncoder, weights_state
from tests.tiny_models import CORPUS


def fused_step(model: SentenceEncoder) -> None:
    """One fused AdamW step on a real loss (fused kernels do not advance parameter versions)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, fused=True)
    model.train()
    features = model.tokenize(CORPUS)
    model(features)["sentence_embedding"].pow(2).sum().backward()
    optimizer.step()
    model.eval()


def test_fused_adamw_moves_weights_without_moving_versions(tiny_dirs):
    # The reason for the key: with _version alone, every check below would see "unchanged".
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    versions = [p._version for p in model.parameters()]
    before = [p.detach().clone() for p in model.parameters()]
    fused_step(model)
    assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters(), strict=True))
    assert [p._version for p in model.parameters()] == versions


def test_a_cast_copy_is_rebuilt_after_a_fused_step(tiny_dirs, emulated_cpu_bf16):
    # bf16 on the CPU makes the engine hold a cast copy, as the CUDA engine always does.
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    first = model.encode(CORPUS, precision="bf16")
    engine = model.backend("torch", "bf16")
    fused_step(model)
    assert model.backend("torch", "bf16") is not engine
    again = model.encode(CORPUS, precision="bf16")
    fresh = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    fresh.load_state_dict(model.state_dict())
    assert np.abs(again - first).max() > 1e-3
    assert np.abs(again - fresh.encode(CORPUS, precision="bf16")).max() <= 1e-6


def test_digest_and_unchanged_since_load_follow_a_fused_step(tiny_dirs, tmp_path):
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    model = SentenceEncoder.load(tmp_path / "m", device="cpu")
    digest = model.weights_digest()
    assert model.unchanged_since_load()
    fused_step(model)
    assert not model.unchanged_since_load()
    assert model.weights_digest() != digest


def test_load_state_dict_casts_and_data_writes_each_move_the_key(tiny_dirs):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    keys = [model.weights_key()]
    model.load_state_dict(model.state_dict())
    keys.append(model.weights_key())
    model.to(torch.bfloat16).to(torch.float32)  # rounds the weights; the storage may be reused
    keys.append(model.weights_key())
    model.to("cpu")  # no change of placement: caches stay valid
    assert model.weights_key() == keys[-1]
    next(model.parameters()).data.mul_(2)  # invisible to torch's version counters...
    assert model.weights_key() == keys[-1]
    model.mark_weights_changed()  # ...so the writer says so
    keys.append(model.weights_key())
    assert len(set(keys)) == len(keys)


def test_a_replaced_parameter_or_submodule_moves_the_kept_parameter_list(tiny_dirs):
    # The key's parameter list is kept between encodes; a swap that registers new weights must still be seen.
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    first = model.encode(CORPUS)
    engine, key = model.backend(), model.weights_key()
    layer = model.transformer.auto_model.encoder.layer[0].output.dense
    layer.weight = torch.nn.Parameter(layer.weight.detach() * 2)  # a new Parameter at a new address
    assert model.weights_key() != key
    assert model.backend() is not engine
    assert np.abs(model.encode(CORPUS) - first).max() > 1e-3
    key = model.weights_key()
    model.transformer.auto_model.encoder.layer[0].output.dense = torch.nn.Linear(layer.in_features, layer.out_features)
    assert model.weights_key() != key
    assert np.abs(model.encode(CORPUS) - first).max() > 1e-3


def test_the_first_optimizer_step_in_a_process_moves_the_key(tiny_dirs, monkeypatch):
    # While no optimizer has stepped a live parameter the key skips the step counts; the first step must
    # still move it (a process that served, then fine-tuned, would otherwise keep its stale engines).
    monkeypatch.setattr(weights_state, "_STEPS", WeakIdKeyDictionary())  # as in a process that never trained
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    before = model.weights_key()
    fused_step(model)
    assert len(weights_state._STEPS) > 0, "the step hook counts into the module's table"
    assert model.weights_key() != before
