"""Graph backends hand a large model's torch weights back to the page cache, never a written one's."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import sbert.backends.base as base
from sbert import SentenceEncoder
from sbert.backends.pages import release_unwritten

TEXTS = ["A man is playing a guitar.", "Two dogs run in the snow.", "ok"]


def resident_bytes(tensor: torch.Tensor) -> int:
    """Bytes of this process's resident pages in the mapping that holds `tensor` (smaps' Rss)."""
    pointer, inside = tensor.untyped_storage().data_ptr(), False
    with open(f"/proc/{os.getpid()}/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:
                low, high = (int(x, 16) for x in fields[0].split("-"))
                inside = low <= pointer < high
            elif inside and fields[0] == "Rss:":
                return int(fields[1]) * 1024
    raise AssertionError("the tensor lies in no mapping")


@pytest.fixture
def saved(tiny_dirs, tmp_path):
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    return tmp_path / "m"


def _loaded(saved):
    model = SentenceEncoder.load(saved, device="cpu")
    return model, model.transformer.auto_model.get_input_embeddings().weight


def test_released_weights_read_back_the_same(saved):
    model, embedding = _loaded(saved)
    before = model.encode(TEXTS, precision="fp32")
    resident = resident_bytes(embedding)
    dropped = release_unwritten(list(model.chain()))
    if dropped == 0:
        pytest.skip("the loader copied the weights here (no file mapping to release)")
    assert resident_bytes(embedding) <= resident - dropped  # handed back
    np.testing.assert_array_equal(model.encode(TEXTS, precision="fp32"), before)  # read in again from the file


def test_a_mapping_written_through_data_is_never_released(saved):
    model, embedding = _loaded(saved)
    if release_unwritten(list(model.chain())) == 0:
        pytest.skip("the loader copied the weights here (no file mapping to release)")
    embedding.data[:, :4] *= 2  # no version counter moves: only the kernel knows this page was written
    edited = model.encode(TEXTS, precision="fp32")
    assert release_unwritten(list(model.chain())) == 0  # the whole file's mapping is kept
    np.testing.assert_array_equal(model.encode(TEXTS, precision="fp32"), edited)  # the edit survives


def test_a_large_model_graph_start_checks_against_torch_then_hands_its_weights_back(saved, monkeypatch):
    model, embedding = _loaded(saved)
    want = model.encode(TEXTS, precision="fp32")
    model.encode(TEXTS, backend="onnx")  # exported and started at the default threshold: nothing handed back
    resident = resident_bytes(embedding)
    model.drop_engines(lambda _slot: True)
    monkeypatch.setattr(base, "LARGE_WEIGHTS_BYTES", 0)  # every model is large now
    got = model.encode(TEXTS, backend="onnx")
    assert resident_bytes(embedding) < resident
    np.testing.assert_allclose(got, want, atol=1e-5)  # the check ran on torch's vectors taken before
    np.testing.assert_array_equal(model.encode(TEXTS, precision="fp32"), want)


@pytest.mark.parametrize("options", [{"precision": "bf16"}, {"backend": "torch-int8"}])
def test_a_large_model_cast_or_quantized_copy_hands_the_source_weights_back(saved, monkeypatch, options):
    monkeypatch.setenv("SBERT_CPU_BF16", "emulate")  # the numerics of the cast copy, on any CPU
    model, embedding = _loaded(saved)
    want = model.encode(TEXTS, **options)  # at the default threshold: the tiny model keeps its pages
    resident = resident_bytes(embedding)
    model.drop_engines(lambda _slot: True)
    monkeypatch.setattr(base, "LARGE_WEIGHTS_BYTES", 0)  # every model is large now
    np.testing.assert_array_equal(model.encode(TEXTS, **options), want)
    assert resident_bytes(embedding) < resident
    fp32 = model.encode(TEXTS, precision="fp32")  # the model itself is whole: its pages are read in again
    np.testing.assert_allclose(fp32, SentenceEncoder.load(saved, device="cpu").encode(TEXTS, precision="fp32"))


@pytest.mark.parametrize("options", [{"precision": "bf16"}, {"backend": "torch-int8"}])
def test_a_copy_of_weights_written_through_data_keeps_the_edit(saved, monkeypatch, options):
    monkeypatch.setenv("SBERT_CPU_BF16", "emulate")
    monkeypatch.setattr(base, "LARGE_WEIGHTS_BYTES", 0)
    model, _ = _loaded(saved)
    before = model.encode(TEXTS, **options)
    model.drop_engines(lambda _slot: True)
    linear = next(m for m in model.transformer.modules() if isinstance(m, torch.nn.Linear))
    noise = torch.randn(linear.weight.shape, generator=torch.Generator().manual_seed(0))
    linear.weight.data += noise  # no version counter moves: only the kernel knows these pages were written
    model.mark_weights_changed()
    edited = model.encode(TEXTS, **options)
    assert not np.allclose(edited, before, atol=1e-3)
    model.drop_engines(lambda _slot: True)
    np.testing.assert_array_equal(model.encode(TEXTS, **options), edited)  # nothing reverted to the file
