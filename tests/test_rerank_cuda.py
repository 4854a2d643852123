"""Cross-encoders on the CUDA engine: a classifier in padded batches, an LLM reranker packed (scores read at each
pair's last token). Run on the lent GPU with `pytest -m cuda` (gpu_check.sh's tests step); skipped elsewhere.
The same engine runs on the CPU in test_cross_encoder.py and test_llm_reranker.py."""

import numpy as np
import pytest
import torch

from sbert.reranker.model import CrossEncoder
from tests.llm_reranker_fixtures import build_causal_lm

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none visible to torch here)"),
]
PAIRS = [("A man is eating food.", "A man eats something."), ("Who plays guitar?", "A woman plays the violin. " * 6),
         ("a", "b"), ("Who plays music?", "A man plays a guitar on stage."), ("", "The cat sleeps."),
         ("Who plays music?", "It rains in Paris."), ("Who plays music?", "A band plays tonight.")]  # fmt: skip


@pytest.mark.parametrize("kind", ["classifier", "llm"])
def test_the_gpu_scores_equal_the_cpus(kind, tiny_dirs, tmp_path):
    folder = build_causal_lm(tmp_path / "lm", max_len=256) if kind == "llm" else tiny_dirs["bert"]
    load = (lambda device: CrossEncoder.load(folder, device=device)) if kind == "llm" else (
        lambda device: CrossEncoder.new(folder, device=device))  # fmt: skip
    cpu = load("cpu")
    want = cpu.predict(PAIRS, activation=False)
    gpu = load("cuda")
    gpu.load_state_dict(cpu.state_dict())  # a fresh head is random: the same weights on both
    np.testing.assert_allclose(gpu.predict(PAIRS, activation=False, precision="fp32"), want, atol=1e-3, rtol=1e-3)
    half = gpu.predict(PAIRS, activation=False, precision="bf16")
    assert np.abs(half - want).max() <= 0.05 * max(np.abs(want).max(), 1.0)  # bf16 keeps about 3 digits
    if kind == "llm":  # its widened yes / no rows spread the scores: bf16 must keep their order
        assert np.corrcoef(half, want)[0, 1] > 0.95
