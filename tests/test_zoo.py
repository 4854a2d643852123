"""Every family of tests/zoo.py: saved by sentence-transformers, loaded by sbert with the same vectors, saved back
and loaded by sentence-transformers the same, and on the exported engines within their precision (or refused in
one line naming what the engine lacks)."""

from __future__ import annotations

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from sbert import SentenceEncoder
from sbert.errors import BackendError
from tests.zoo import FAMILIES, build_family

TEXTS = ["A man is playing a guitar.", "ok", "The quarterly report, delayed twice, shows revenue growing " * 3]
# The exported graphs start with a Transformer: a StaticEmbedding (alone, or as a Router's query route) has none.
NOT_EXPORTED = {("StaticEmbedding", None), ("StaticEmbedding", "query"),
                ("Router (static query, transformer document)", "query")}  # fmt: skip


def close(got: np.ndarray, want: np.ndarray, tolerance: float) -> bool:
    """Within `tolerance` relative to the largest component (vectors may be unnormalised)."""
    return float(np.abs(got - want).max()) <= tolerance * max(1.0, float(np.abs(want).max()))


# Decoders beside Qwen3-Embedding take the same lasttoken path: `make test-e2e` runs them (time budget).
IN_E2E = {
    "gte-Qwen2 (qwen2 decoder, lasttoken)",
    "llama decoder, lasttoken",
    "e5-mistral (mistral decoder, lasttoken)",
}


@pytest.mark.parametrize("family", [pytest.param(f, marks=pytest.mark.e2e) if f in IN_E2E else f for f in FAMILIES])
def test_family_loads_both_ways_and_runs_on_every_engine(family, tmp_path):
    saved = build_family(family, tmp_path)
    reference = SentenceTransformer(str(saved), device="cpu")
    want = {task: reference.encode(TEXTS, task=task) for task in (None, "query")}
    ours = SentenceEncoder.load(saved, device="cpu")
    for task, vectors in want.items():
        assert close(ours.encode(TEXTS, task=task, on_truncation="ignore"), vectors, 1e-5), task
    ours.save(tmp_path / "back")
    back = SentenceTransformer(str(tmp_path / "back"), device="cpu")
    assert close(back.encode(TEXTS), want[None], 1e-5)
    for backend in ("onnx", "openvino"):
        for task, vectors in want.items():
            if (family, task) in NOT_EXPORTED:
                with pytest.raises(BackendError, match=f"backend '{backend}' exports a Transformer chain") as refused:
                    ours.encode(TEXTS, backend=backend, task=task)
                assert "\n" not in str(refused.value)
            else:
                got = ours.encode(TEXTS, backend=backend, task=task, on_truncation="ignore")
                assert close(got, vectors, 1e-4), (backend, task)


def test_a_decoder_sequence_classification_reranker_scores_as_sentence_transformers(tmp_path):
    """A Qwen2 reranker head (scores the last real token; left padding) gives CrossEncoder.predict's scores."""
    import torch
    from sentence_transformers import CrossEncoder as Reference
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from sbert import CrossEncoder
    from tests.tiny_models import build_qwen2

    folder = build_qwen2(tmp_path / "q")
    torch.manual_seed(0)
    head = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=1)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    head.config.pad_token_id = tokenizer.pad_token_id
    head.save_pretrained(tmp_path / "rr")
    tokenizer.save_pretrained(tmp_path / "rr")
    pairs = [("a query", "a document about it"), ("short", "a much longer document text, with more words in it")]
    want = Reference(str(tmp_path / "rr"), device="cpu").predict(pairs)
    got = CrossEncoder.load(tmp_path / "rr", device="cpu").predict(pairs)
    assert np.abs(np.asarray(got) - want).max() <= 1e-5 and abs(want[0] - want[1]) > 1e-4
