"""The lean packed BERT forward (backends/lean_bert.py): the modules' vectors, used only where it matches them."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.backends import varlen
from sbert.backends.lean_bert import LeanBert, lean_blocker, lean_encoder
from sbert.backends.packed_chain import packed_token_embeddings
from sbert.backends.packing import pack
from sbert.backends.projections import MATMUL_ENV
from sbert.backends.torch_cpu import TorchCpuBackend
from sbert.modules import Transformer
from tests.test_cpu_packed import one_by_one
from tests.tiny_models import CORPUS

SENTENCES = [*CORPUS, "a", "the cat sat on the mat " * 6, "dogs " * 40]
CPU = torch.device("cpu")


def packed_engine(model: SentenceEncoder, dtype: torch.dtype = torch.float32) -> TorchCpuBackend:
    """A CPU backend of `model` with its packed copy made."""
    engine = TorchCpuBackend(model.as_chain(), CPU, dtype)
    assert engine.packed_modules() is not None
    return engine


@pytest.mark.parametrize("matmul", ["onednn", "linear"])  # projections.py's two engines
def test_a_bert_encoder_takes_the_lean_forward_with_the_modules_vectors(tiny_dirs, matmul, monkeypatch):
    monkeypatch.setenv(MATMUL_ENV, matmul)
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu", normalize=True)
    engine = packed_engine(model)
    assert isinstance(engine._lean, LeanBert)
    ids = model.transformer.token_ids(SENTENCES)[0]
    lean = engine.embed(ids)
    engine._lean = None  # the same packed batch through the transformers modules
    modules = engine.embed(ids)
    assert np.abs(lean - modules).max() <= 1e-6
    alone = one_by_one(model, SENTENCES)  # unpacked, padded
    assert np.abs(lean - alone).max() <= 1e-5


def test_the_lean_forward_matches_the_real_default_model(real_model_dir):
    model = SentenceEncoder.load(real_model_dir, device="cpu")
    engine = packed_engine(model)
    packed = engine.packed_modules()
    assert engine._lean is not None and packed is not None and isinstance(packed[0], Transformer)
    batch = pack(sorted(model.transformer.token_ids(SENTENCES)[0], key=len, reverse=True))
    with torch.inference_mode():
        got, want = engine._lean(batch), packed_token_embeddings(packed[0], batch)
    assert got.shape == want.shape and float((got - want).abs().max()) <= 1e-5


def test_a_roberta_encoder_takes_the_lean_forward_with_its_offset_positions(tiny_dirs):
    # RoBERTa's positions start at padding_idx + 1: a lean forward reading them from 0 would fail the probe
    model = SentenceEncoder.from_transformer(tiny_dirs["roberta"], device="cpu", normalize=True)
    engine = packed_engine(model)
    assert isinstance(engine._lean, LeanBert) and engine._positions.first > 0
    ids = model.transformer.token_ids(SENTENCES)[0]
    lean = engine.embed(ids)
    engine._lean = None
    assert np.abs(lean - engine.embed(ids)).max() <= 1e-6
    assert np.abs(lean - one_by_one(model, SENTENCES)).max() <= 1e-5


def test_albert_packs_through_its_modules(tiny_dirs):
    engine = packed_engine(SentenceEncoder.from_transformer(tiny_dirs["albert"], device="cpu"))
    assert engine._lean is None and engine.packed


def test_a_large_bert_keeps_to_its_modules(tiny_dirs, monkeypatch):
    # the fused projections are a copy: a large model's memory bound has no room for it
    monkeypatch.setattr("sbert.backends.base.LARGE_WEIGHTS_BYTES", 0)
    engine = packed_engine(SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu"))
    assert engine._lean is None and engine.packed


def test_a_lean_forward_that_disagrees_with_the_modules_is_not_used(tiny_dirs, caplog):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    packed = packed_engine(model).packed_modules()
    assert packed is not None and isinstance(packed[0], Transformer)
    encoder = packed[0]
    with caplog.at_level(logging.INFO, logger="sbert.backends.varlen"):
        off = lean_encoder(encoder.auto_model, varlen.KERNELS["grid"],
                           lambda b: packed_token_embeddings(encoder, b) + 1e-2)  # fmt: skip
    assert off is None
    assert any("lean packed forward off (max error" in r.getMessage() for r in caplog.records)


def test_bert_variants_the_lean_forward_does_not_repeat_are_refused(tiny_dirs):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    bert = model.transformer.auto_model
    assert lean_blocker(bert) is None
    bert.config.position_embedding_type = "relative_key"
    assert "relative_key" in str(lean_blocker(bert))
    bert.config.position_embedding_type = "absolute"
    bert.config.is_decoder = True
    assert "decoder" in str(lean_blocker(bert))
    bert.config.is_decoder = False
    bert.train()
    assert "training" in str(lean_blocker(bert))
    bert.eval()
    albert = SentenceEncoder.from_transformer(tiny_dirs["albert"], device="cpu").transformer.auto_model
    assert "not a plain BERT or RoBERTa encoder" in str(lean_blocker(albert))
    bert.config.model_type = "roberta"  # a BertModel class whose config says otherwise is not repeated
    assert "not a plain BERT" in str(lean_blocker(bert))


def test_weights_changed_in_place_reach_the_lean_forward(tiny_dirs):
    # The lean forward holds fused copies of the projections: a weights change must give a new engine.
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    before = model.encode(SENTENCES, on_truncation="ignore")
    assert model.backend("torch")._lean is not None  # type: ignore[attr-defined]
    with torch.no_grad():
        model.transformer.auto_model.encoder.layer[0].attention.self.value.weight.mul_(-2.0)
    after = model.encode(SENTENCES, on_truncation="ignore")
    alone = one_by_one(model, SENTENCES)
    assert np.abs(after - before).max() > 1e-3
    assert np.abs(after - alone).max() <= 1e-5


def test_bf16_weights_take_the_lean_forward_within_bf16_rounding(tiny_dirs, emulated_cpu_bf16):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    engine = packed_engine(model, torch.bfloat16)
    assert engine._lean is not None
    ids = model.transformer.token_ids(SENTENCES)[0]
    lean = engine.embed(ids)
    engine._lean = None
    assert np.abs(lean - engine.embed(ids)).max() <= 2e-2
