"""The CPU torch backend's padding-free batches: same vectors as padded ones, one batch per core, live settings."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.backends.torch_cpu import TorchCpuBackend, per_core
from tests.tiny_models import CORPUS

SENTENCES = [*CORPUS, "", "a", "the cat sat on the mat " * 6, "dogs " * 40]
CPU = torch.device("cpu")


def one_by_one(model: SentenceEncoder, texts: list[str], **options) -> np.ndarray:
    """Each text alone: no padding, no packing, whatever the backend does with batches."""
    return np.concatenate([model.encode([t], on_truncation="ignore", **options) for t in texts])


@pytest.mark.parametrize("pooling", ["mean", "cls", "cnn"])
def test_packed_cpu_batches_give_the_padded_vectors(tiny_dir, pooling):
    model = SentenceEncoder.from_transformer(tiny_dir, pooling=pooling, device="cpu")
    engine = model.backend("torch")
    assert isinstance(engine, TorchCpuBackend) and engine.packed  # tiny BERT, RoBERTa and ALBERT all pack
    got = model.encode(SENTENCES, on_truncation="ignore", batch_tokens=64)
    assert np.abs(got - one_by_one(model, SENTENCES)).max() <= 1e-5
    # The user's model keeps its attention; the engine switched its own copy of the encoder only.
    assert engine.modules[0] is not model.transformer and engine.modules[1:] == tuple(model.chain())[1:]
    assert model.transformer.auto_model.config._attn_implementation != "sbert_varlen_grid"


def test_a_pooling_change_after_the_first_encode_counts(tiny_dirs):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    before = model.encode(CORPUS[:3], prompt="query: ")
    model[1].include_prompt = False  # the engine's pooling is the model's own module
    after = model.encode(CORPUS[:3], prompt="query: ")
    assert np.abs(after - before).max() > 1e-3


def test_an_unpackable_encoder_stays_padded_with_one_line(tiny_dirs, caplog):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    model.transformer.auto_model.config.model_type = "mpnet"  # a type the packed path does not know
    with caplog.at_level(logging.INFO, logger="sbert.backends"):
        engine = TorchCpuBackend(model.as_chain(), CPU)
    assert not engine.packed and any("mpnet" in r.getMessage() for r in caplog.records)
    np.testing.assert_allclose(model.encode(SENTENCES, on_truncation="ignore"), one_by_one(model, SENTENCES),
                               atol=1e-5)  # fmt: skip


def test_a_lone_batch_is_cut_so_that_each_core_has_one():
    lengths = [90, 60, 40, 40, 30, 30, 20, 20]
    parts = per_core([list(range(8))], lengths, workers=2)
    assert len(parts) == 2 and [i for p in parts for i in p] == list(range(8))  # order kept, nothing lost
    tokens = [sum(lengths[i] for i in p) for p in parts]
    assert abs(tokens[0] - tokens[1]) <= 90  # about even: one long row may tip it
    short = [12, 10, 9, 8]  # too few tokens to be worth two cores: one core runs it whole
    assert per_core([[0, 1, 2, 3]], short, workers=2) == [[0, 1, 2, 3]]
    assert per_core([[0]], lengths, workers=2) == [[0]]  # one row stays whole
    assert per_core([[0, 1], [2]], lengths, workers=2) == [[0, 1], [2]]  # already one per core
    assert per_core([[0, 1, 2]], lengths, workers=1) == [[0, 1, 2]]
