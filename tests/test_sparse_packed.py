"""The packed SPLADE engine (the CUDA path) run on the CPU: the padded engine's vectors, batches cut by real tokens."""

from __future__ import annotations

import numpy as np
import pytest

from sbert.sparse import SparseEncoder
from sbert.sparse.packed import PackedSplade
from tests.test_sparse import TEXTS, build_mlm, st_splade
from tests.tiny_models import CORPUS

MIXED = [*TEXTS, *CORPUS, "word " * 80]  # one text over the 64-token limit


@pytest.fixture(scope="module")
def splades(tiny_dirs, tmp_path_factory):
    root = tmp_path_factory.mktemp("packed")
    return {
        "bert-max": st_splade(build_mlm(tiny_dirs["bert"], root / "bert"), root / "s1"),
        "roberta-sum": st_splade(build_mlm(tiny_dirs["roberta"], root / "roberta"), root / "s2", "sum", "log1p_relu"),
        "distilbert": st_splade(build_mlm(tiny_dirs["bert"], root / "distil", "distilbert"), root / "s3"),
    }


@pytest.mark.parametrize("name", ["bert-max", "roberta-sum"])
def test_packed_vectors_equal_the_padded_engine(splades, name, monkeypatch):
    model = SparseEncoder.load(splades[name], device="cpu")
    padded = model.encode(MIXED).toarray()
    monkeypatch.setattr("sbert.sparse.model.PACKED_TOKENS", 40)  # many small packed batches, rows in any order
    packed = model._splade_rows(MIXED, 4, None, "torch", False, packed=True).toarray()
    assert isinstance(model._packed_engine(), PackedSplade)
    np.testing.assert_allclose(packed, padded, rtol=1e-5, atol=1e-6)
    assert (packed != 0).sum() == (padded != 0).sum()  # the same active dimensions
    capped = model._splade_rows(MIXED, 4, 5, "torch", False, packed=True)
    assert np.diff(capped.indptr).max() == 5
    # The engine runs a copy: the user's model keeps its own attention implementation.
    engine = model._packed_engine()
    assert engine is not None
    assert model.mlm.auto_model.config._attn_implementation != engine.mlm.auto_model.config._attn_implementation


def test_a_model_the_packed_path_cannot_take_runs_padded(splades, caplog):
    import logging

    model = SparseEncoder.load(splades["distilbert"], device="cpu")
    with caplog.at_level(logging.INFO, logger="sbert.sparse.model"):
        vectors = model._splade_rows(MIXED, 4, None, "torch", False, packed=True)
    assert model._packed_engine() is None and "SPLADE packed batches off" in caplog.text
    same = model._splade_rows(MIXED, 4, None, "torch", False, packed=False)
    assert np.array_equal(vectors.toarray(), same.toarray())


def test_new_weights_build_a_new_engine(splades):
    import torch

    model = SparseEncoder.load(splades["bert-max"], device="cpu")
    first = model._packed_engine()
    with torch.no_grad():
        model.mlm.auto_model.base_model.embeddings.word_embeddings.weight.mul_(1.5)
    assert model._packed_engine() is not first
    np.testing.assert_allclose(model._splade_rows(MIXED, 4, None, "torch", False, packed=True).toarray(),
                               model.encode(MIXED).toarray(), rtol=1e-5, atol=1e-6)  # fmt: skip


@pytest.mark.cuda
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU (none visible to torch here)")
def test_cuda_encode_runs_packed_and_equals_the_cpu(splades):
    cpu = SparseEncoder.load(splades["roberta-sum"], device="cpu")
    gpu = SparseEncoder.load(splades["roberta-sum"], device="cuda")
    got = gpu.encode(MIXED).toarray()  # on CUDA the packed engine runs by default
    assert isinstance(gpu._packed_engine(), PackedSplade)
    np.testing.assert_allclose(got, cpu.encode(MIXED).toarray(), rtol=1e-4, atol=1e-5)
