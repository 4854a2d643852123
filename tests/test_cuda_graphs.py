"""The packed forward replayed from CUDA graphs (SBERT_CUDA_GRAPHS=1): the same vectors as the eager packed
forward in the same dtype, batches of every bucket and one that fits none, a prompt skip captured apart, and a
batch costing a handful of launches. Run on the lent GPU with `pytest -m cuda`; skipped elsewhere."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.backends.torch_cuda import CudaBackend
from sbert.encoding.engine import embed_rows
from tests.tiny_models import CORPUS

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none visible to torch here)"),
]
TEXTS = [*CORPUS * 30, "dogs " * 200]  # many short rows, and one long enough to fit no bucket of a small budget


def engines(tiny_dir, monkeypatch) -> tuple[SentenceEncoder, CudaBackend, CudaBackend]:
    model = SentenceEncoder.from_transformer(tiny_dir, device="cuda")
    eager = CudaBackend(model.as_chain(), torch.device("cuda"), torch.bfloat16)
    monkeypatch.setenv("SBERT_CUDA_GRAPHS", "1")
    graphed = CudaBackend(model.as_chain(), torch.device("cuda"), torch.bfloat16)
    if graphed.graphs is None:
        pytest.skip(f"attention kernel {graphed.kernel!r} is not capturable here (flash-attn or torch varlen needed)")
    return model, eager, graphed


@pytest.mark.parametrize("batch_tokens", [300, 700, 2048])
def test_graphs_give_the_eager_vectors(tiny_dirs, monkeypatch, batch_tokens):
    model, eager, graphed = engines(tiny_dirs["bert"], monkeypatch)
    ids = model.transformer.token_ids(TEXTS)[0]
    want = embed_rows(eager, ids, model.embedding_dimension, batch_tokens=batch_tokens)
    got = embed_rows(graphed, ids, model.embedding_dimension, batch_tokens=batch_tokens)
    np.testing.assert_allclose(got, want, atol=2e-3)  # bf16 both; only the kernels' reduction order may differ
    skipped = embed_rows(graphed, ids, model.embedding_dimension, batch_tokens=batch_tokens, skip=2)
    assert np.abs(skipped - got).max() > 0  # a prompt skip is a graph of its own, not the skip-0 one replayed
    assert len(graphed.graphs._graphs) >= 2


def test_a_batch_is_a_handful_of_launches(tiny_dirs, monkeypatch):
    model, _, graphed = engines(tiny_dirs["bert"], monkeypatch)
    ids = model.transformer.token_ids(CORPUS * 20)[0]
    embed_rows(graphed, ids, model.embedding_dimension, batch_tokens=1024)  # captures
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        embed_rows(graphed, ids, model.embedding_dimension, batch_tokens=1024)
        torch.cuda.synchronize()
    launches = sum(e.count for e in prof.key_averages() if e.key.startswith(("cudaLaunchKernel", "cudaGraphLaunch")))
    batches = -(-sum(len(r) for r in ids) // 1024)
    assert launches <= 10 * batches, (launches, batches)
