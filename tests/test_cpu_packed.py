"""The CPU torch backend's padding-free batches: same vectors as padded ones, chosen per batch, one batch per core."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.backends import torch_cpu
from sbert.backends.torch_cpu import PACK_MIN_PADDING, TorchCpuBackend, padding_share, per_core
from sbert.encoding.engine import plan_batches
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
    assert isinstance(engine, TorchCpuBackend) and engine.packable  # tiny BERT, RoBERTa and ALBERT all pack
    ids = model.transformer.token_ids(SENTENCES)[0]
    assert padding_share(ids) > PACK_MIN_PADDING  # mixed lengths in one batch: it runs packed
    got = engine.embed(ids)
    assert engine.packed_modules() is not None
    assert np.abs(got - one_by_one(model, SENTENCES)).max() <= 1e-5
    # The user's model keeps its attention; the engine switched its own copy of the encoder only.
    packed = engine.packed_modules()
    assert packed is not None and packed[0] is not model.transformer and packed[1:] == tuple(model.chain())[1:]
    assert model.transformer.auto_model.config._attn_implementation != "sbert_varlen_grid"


@pytest.mark.parametrize(("kind", "lean"), [("bert", True), ("albert", False)])
def test_length_sorted_batches_run_padded_unless_the_lean_forward_runs(tiny_dirs, kind, lean, monkeypatch):
    # Through the modules a batch with little padding costs less padded; the lean forward packs everything.
    model = SentenceEncoder.from_transformer(tiny_dirs[kind], device="cpu")
    engine = model.backend("torch")
    same = model.transformer.token_ids([CORPUS[0]] * 3)[0]
    assert padding_share(same) <= PACK_MIN_PADDING
    padded_calls: list[int] = []
    padded = torch_cpu.embed_padded
    monkeypatch.setattr(torch_cpu, "embed_padded", lambda *a, **k: padded_calls.append(1) or padded(*a, **k))
    got = engine.embed(same)
    assert (engine._lean is not None) == lean
    assert padded_calls == ([] if lean else [1])
    assert np.abs(got - one_by_one(model, [CORPUS[0]] * 3)).max() <= 1e-5


def test_a_packing_engine_plans_mixed_lengths_by_real_tokens(tiny_dirs):
    # A server's merged group: one long text among short ones. Counted padded (rows x longest) it needs
    # several batches, each a forward; counted by real tokens it is one, and that batch then runs packed.
    lengths = [40] + [6] * 15
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    engine = TorchCpuBackend(model.as_chain(), CPU)
    assert engine.packed
    assert plan_batches(engine, lengths, None, 200) == [list(range(16))]
    model.transformer.auto_model.config.model_type = "mpnet"  # an encoder that cannot pack plans padded
    padded = TorchCpuBackend(model.as_chain(), CPU)
    assert not padded.packed
    batches = plan_batches(padded, lengths, None, 200)
    assert len(batches) > 1 and all(max(lengths[i] for i in b) * len(b) <= 200 for b in batches if len(b) > 1)


def test_a_packing_engine_gives_its_cores_equal_tokens_and_a_lane_its_filled_batches(tiny_dirs):
    from sbert.backends.base import lane_threads

    lengths = [40, 30, 25, 20] + [10] * 30 + [6] * 20  # a budget of 512 fills 511 + 24 tokens
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    engine = TorchCpuBackend(model.as_chain(), CPU)
    engine.workers = 2
    tokens = [sum(lengths[i] for i in b) for b in plan_batches(engine, lengths, None, 512)]
    assert len(tokens) == 2 and max(tokens) - min(tokens) <= 40
    with lane_threads(1, torch.get_num_threads()):  # a serving lane runs its batches one after another
        assert [sum(lengths[i] for i in b) for b in plan_batches(engine, lengths, None, 512)] == [511, 24]


def test_a_pooling_change_after_the_first_encode_counts(tiny_dirs):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    before = model.encode(CORPUS[:3], prompt="query: ")
    model[1].include_prompt = False  # the engine's pooling is the model's own module
    after = model.encode(CORPUS[:3], prompt="query: ")
    assert np.abs(after - before).max() > 1e-3


def test_an_unpackable_encoder_stays_padded_with_one_line(tiny_dirs, caplog):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    model.transformer.auto_model.config.model_type = "mpnet"  # a type the packed path does not know
    engine = TorchCpuBackend(model.as_chain(), CPU)
    with caplog.at_level(logging.INFO, logger="sbert.backends"):
        got = engine.embed(model.transformer.token_ids(SENTENCES)[0])
    assert engine.packed_modules() is None and not engine.packable
    assert any("mpnet" in r.getMessage() for r in caplog.records)
    np.testing.assert_allclose(got, one_by_one(model, SENTENCES), atol=1e-5)


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


def test_two_cores_run_batches_side_by_side_with_the_same_vectors(tiny_dirs):
    # make test runs each worker with one torch thread: this test asks for two so the threaded path runs.
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
        engine = model.backend("torch")
        assert isinstance(engine, TorchCpuBackend) and engine.workers == 2
        got = model.encode(SENTENCES * 3, batch_size=2, on_truncation="ignore")
    finally:
        torch.set_num_threads(threads)
    assert torch.get_num_threads() == threads  # the pool's threads set their own count, not the caller's
    np.testing.assert_allclose(got, np.tile(one_by_one(model, SENTENCES), (3, 1)), atol=1e-5)
