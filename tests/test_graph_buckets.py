"""The CUDA-graph bucket plan (backends/graph_buckets.py) and the padded batches graphs replay, on the CPU: every
batch that fits a bucket is padded to exactly its shape by well-formed filler rows, the real rows' vectors are
those of the unpadded batch, and a batch that fits no bucket is left to the eager forward. The capture itself
is in tests/test_cuda_graphs.py (cuda-marked)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.backends.cuda_graphs import GraphBatch, GraphedForward, graphs_wanted
from sbert.backends.graph_buckets import Bucket, filler_lengths, fit, padded_rows, plan_buckets
from sbert.backends.packed_chain import packed_chain_forward
from sbert.backends.packing import pack
from sbert.backends.torch_cuda import MAX_ROWS, CudaBackend
from tests.tiny_models import CORPUS

CPU = torch.device("cpu")


def test_the_plan_halves_the_budget_down_to_the_smallest_bucket():
    assert plan_buckets(16384, 512, 512) == (Bucket(2048, 512, 512), Bucket(4096, 512, 512),
                                             Bucket(8192, 512, 512), Bucket(16384, 512, 512))  # fmt: skip
    assert plan_buckets(1000, 512, 128) == (Bucket(500, 125, 128), Bucket(1000, 250, 128))  # 250 < 256: no bucket
    assert plan_buckets(100, 512, 128) == ()  # below the smallest bucket: always eager


@pytest.mark.parametrize("seed", range(20))
def test_fillers_pad_every_fitting_batch_to_exactly_its_bucket(seed):
    rng = np.random.default_rng(seed)
    buckets = plan_buckets(8192, 512, 128)
    lengths = rng.integers(1, 129, rng.integers(1, 120)).tolist()
    fitted = fit(buckets, lengths)
    if sum(lengths) > buckets[-1].tokens:
        assert fitted is None
        return
    assert fitted is not None
    bucket = fitted.bucket
    assert len(lengths) + len(fitted.fillers) == bucket.rows
    assert sum(lengths) + sum(fitted.fillers) == bucket.tokens
    assert all(1 <= n <= bucket.max_len for n in fitted.fillers)
    smaller = [b for b in buckets if b.tokens < bucket.tokens]
    assert all(filler_lengths(b, lengths) is None for b in smaller)  # the smallest bucket that fits


def test_batches_no_bucket_holds_run_eagerly():
    buckets = plan_buckets(1024, 512, 64)
    assert fit(buckets, [65]) is None  # longer than the bucket's longest row
    assert fit(buckets, [64] * 17) is None  # more tokens than the largest bucket
    assert fit(buckets, [1] * 257) is None  # more rows than any bucket holds
    assert filler_lengths(Bucket(10, 2, 8), [2]) == (8,)
    assert filler_lengths(Bucket(10, 2, 7), [2]) is None  # one filler row of 8 is over the longest row
    assert filler_lengths(Bucket(10, 3, 8), [9]) is None  # over the longest row
    assert filler_lengths(Bucket(6, 3, 8), [2, 3]) == (1,)
    assert filler_lengths(Bucket(5, 2, 8), [2, 3]) == ()  # an exact fit needs no fillers
    assert filler_lengths(Bucket(6, 2, 8), [2, 3]) is None  # every row taken: no row for the spare token
    assert padded_rows([[5, 6]], (2, 1), 0) == [[5, 6], [0, 0], [0]]


def test_a_padded_batch_gives_the_unpadded_rows_vectors(tiny_dirs):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    engine = CudaBackend(model.as_chain(), CPU, torch.float32)  # the CUDA engine's packed path, on the CPU
    graphs = GraphedForward(engine.modules, CPU, 1024, MAX_ROWS, model.transformer.max_seq_length, engine.positions,
                            0)  # fmt: skip
    rows = model.transformer.token_ids(CORPUS)[0]
    host = graphs.prepare(rows, pin=False)
    assert isinstance(host, GraphBatch) and host.rows == len(rows)
    assert int(host.batch.input_ids.shape[0]) == host.fitted.bucket.tokens  # the bucket's static shape
    with torch.inference_mode():
        padded = packed_chain_forward(engine.modules, host.batch)[: host.rows]
        plain = packed_chain_forward(engine.modules, pack(rows, engine.positions))
    torch.testing.assert_close(padded, plain, atol=1e-5, rtol=1e-5)


def test_graphs_are_opt_in_and_need_a_capturable_kernel(monkeypatch):
    cuda = torch.device("cuda")
    assert not graphs_wanted("flash_attn", cuda)
    monkeypatch.setenv("SBERT_CUDA_GRAPHS", "1")
    assert graphs_wanted("flash_attn", cuda) and graphs_wanted("torch", cuda)
    assert not graphs_wanted("nested", cuda) and not graphs_wanted("torch", CPU)
