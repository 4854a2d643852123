"""The padding-free GPU engine, run on the CPU: packing, varlen attention, pooling, pipeline, OOM halving."""

import logging

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.backends import varlen
from sbert.backends.packing import pack, packed_cls, packed_max, packed_mean, unpack
from sbert.backends.torch_cuda import CudaBackend, prefetch
from sbert.encoding.batching import packed_batches
from sbert.encoding.engine import embed_rows
from sbert.modules.pooling import cls_pool, max_pool, mean_pool
from tests.tiny_models import CORPUS

SENTENCES = [*CORPUS, "", "a", "the cat sat on the mat " * 6, "dogs " * 40]
CPU = torch.device("cpu")


def packed_engine(model: SentenceEncoder) -> CudaBackend:
    return CudaBackend(model.as_chain(), CPU, torch.float32)


def test_pack_lays_rows_end_to_end():
    batch = pack([[5, 6, 7], [8], [9, 10]], position_offset=2)
    assert batch.input_ids.tolist() == [5, 6, 7, 8, 9, 10]
    assert batch.position_ids.tolist() == [2, 3, 4, 2, 2, 3]
    assert batch.cu_seqlens.tolist() == [0, 3, 4, 6] and batch.cu_seqlens.dtype == torch.int32
    assert batch.max_len == 3 and batch.rows == 3


def test_packed_pooling_equals_padded_pooling():
    gen = torch.Generator().manual_seed(0)
    lengths = [4, 1, 7]
    tokens = torch.randn(sum(lengths), 6, generator=gen)
    cu = torch.tensor([0, 4, 5, 12], dtype=torch.int32)
    grid, mask = unpack(tokens, cu, max(lengths))
    assert mask.sum(1).tolist() == lengths
    for packed, padded in ((packed_mean, mean_pool), (packed_max, max_pool), (packed_cls, cls_pool)):
        assert torch.allclose(packed(tokens, cu), padded(grid, mask), atol=1e-6)


def test_nested_kernel_equals_per_sentence_attention():
    picked = varlen.pick_kernel(CPU, torch.float32, heads=2, head_dim=8)
    assert picked is not None and picked[0] == "nested"  # no flash kernels on a CPU


def test_packed_batches_count_real_tokens():
    lengths = [10, 9, 3, 3, 2]
    batches = packed_batches([0, 1, 2, 3, 4], lengths, max_tokens=20, max_size=8)
    assert batches == [[0, 1], [2, 3, 4]]
    assert all(sum(lengths[i] for i in b) <= 20 for b in batches)
    assert packed_batches([0], [50], 20, 8) == [[0]]  # a row over the budget still runs


@pytest.mark.parametrize("pooling", ["mean", "max", "cls", "cnn", "ngram-cnn"])
def test_packed_equals_padded_for_each_encoder_and_head(tiny_dir, pooling):
    model = SentenceEncoder.from_transformer(tiny_dir, pooling=pooling, normalize=pooling == "mean", device="cpu")
    expected = model.encode(SENTENCES, on_truncation="ignore", batch_size=1)  # each sentence alone, padded
    engine = packed_engine(model)
    assert engine.packed, "tiny BERT, RoBERTa and ALBERT all take the packed path"
    ids = model.transformer.token_ids(SENTENCES)[0]
    got = embed_rows(engine, ids, model.embedding_dimension, batch_tokens=64)
    assert np.abs(got - expected).max() <= 1e-5
    # The user's model keeps its own attention implementation: the engine switched a copy.
    assert (
        model.transformer.auto_model.config._attn_implementation
        != engine.modules[0].auto_model.config._attn_implementation
    )


def test_bf16_stays_close_to_fp32(tiny_dirs):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    ids = model.transformer.token_ids(SENTENCES)[0]
    fp32 = model.encode(SENTENCES, on_truncation="ignore")
    engine = CudaBackend(model.as_chain(), CPU, torch.bfloat16)
    got = embed_rows(engine, ids, model.embedding_dimension)
    assert got.dtype == np.float32
    cosine = (fp32 * got).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(got, axis=1)
    assert cosine.min() >= 0.999
    assert next(model.parameters()).dtype == torch.float32  # the user's weights were not cast


def test_unpackable_architecture_falls_back_with_one_line(tiny_dirs, caplog):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    model.transformer.auto_model.config.model_type = "mpnet"  # a type the packed path does not know
    with caplog.at_level(logging.INFO, logger="sbert.backends.torch_cuda"):
        engine = packed_engine(model)
    assert not engine.packed
    notes = [r.getMessage() for r in caplog.records if "packed batches off" in r.getMessage()]
    assert len(notes) == 1 and "mpnet" in notes[0]
    ids = model.transformer.token_ids(SENTENCES)[0]
    got = embed_rows(engine, ids, model.embedding_dimension)
    assert np.abs(got - model.encode(SENTENCES, on_truncation="ignore")).max() <= 1e-5


def test_out_of_memory_halves_the_budget_once_and_loses_nothing(tiny_dirs, caplog, monkeypatch):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    engine = packed_engine(model)
    real = engine.forward

    def small_memory(host):
        if int(host.input_ids.shape[0]) > 60:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(host)

    monkeypatch.setattr(engine, "forward", small_memory)
    ids = model.transformer.token_ids(SENTENCES)[0]
    with caplog.at_level(logging.WARNING, logger="sbert.backends.torch_cuda"):
        got = embed_rows(engine, ids, model.embedding_dimension, batch_tokens=400)
    assert np.abs(got - model.encode(SENTENCES, on_truncation="ignore")).max() <= 1e-5
    assert engine.budget < 400
    assert sum("budget halved" in r.getMessage() for r in caplog.records) == 1


def test_prefetch_keeps_order_and_raises_producer_errors():
    assert [b for b, _ in prefetch([[1], [2], [3]], lambda b: b[0] * 2)] == [[1], [2], [3]]

    def broken(batch):
        if batch == [2]:
            raise ValueError("bad batch")
        return batch

    with pytest.raises(ValueError, match="bad batch"):
        list(prefetch([[1], [2], [3]], broken))
    # leaving early stops the producer instead of leaving it blocked on a full queue
    first = next(iter(prefetch([[i] for i in range(100)], lambda b: b)))
    assert first == ([0], [0])
