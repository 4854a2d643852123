"""Each late-interaction loss against sentence-transformers 6's value on the same batch and weights."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from sbert.losses.multivector import MultiVectorContrastiveLoss, MultiVectorDistillLoss, maxsim_scores
from sbert.multivector import MultiVectorEncoder
from tests.colbert_fixtures import tiny_colbert

QUERIES = ["a man is playing", "why, a dog?", "the cat sat"]
POSITIVES = ["a man, is playing.", "dogs run! in the park? (today)", "the cat sat on the mat"]
NEGATIVES = ["the weather is cold today", "two men are riding horses", "a child is reading a book"]
EXPANSION = {"strategy": "fixed", "attend": False, "length": 12}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_colbert(tmp_path_factory.mktemp("mvloss"), query_length=12, document_length=16,
                        query_expansion=EXPANSION)  # fmt: skip


def ours(model: MultiVectorEncoder, texts: list[str], task: str) -> dict[str, Any]:
    prompt = model.settings.resolve_prompt(task=task)
    ids, _ = model._rules.token_ids(model.transformer, texts, task, prompt)
    return model(model._rules.pad(model.transformer, ids, task))


def reference(ref: Any, texts: list[str], task: str) -> dict[str, Any]:
    features = ref.preprocess(texts, prompt=ref.prompts[task], task=task)
    features["task"] = task
    return features


def test_contrastive_loss_equals_the_reference(folder: Path) -> None:
    from sentence_transformers import MultiVectorEncoder as Reference
    from sentence_transformers.multi_vector_encoder.losses import MultiVectorMultipleNegativesRankingLoss

    ref = Reference(str(folder), device="cpu")
    model = MultiVectorEncoder.load(folder, device="cpu")
    columns = [(QUERIES, "query"), (POSITIVES, "document"), (NEGATIVES, "document")]
    for scale, used in ((1.0, columns), (2.5, columns[:2])):
        expected = MultiVectorMultipleNegativesRankingLoss(ref, scale=scale)([reference(ref, t, k) for t, k in used])
        got = MultiVectorContrastiveLoss(scale).forward_features([ours(model, t, k) for t, k in used], None)
        assert abs(float(got) - float(expected)) <= 1e-5


def test_distillation_loss_equals_the_reference(folder: Path) -> None:
    from sentence_transformers import MultiVectorEncoder as Reference
    from sentence_transformers.multi_vector_encoder.losses import MultiVectorDistillKLDivLoss

    ref = Reference(str(folder), device="cpu")
    model = MultiVectorEncoder.load(folder, device="cpu")
    teacher = torch.tensor([[3.0, 1.0], [0.5, 2.0], [1.0, 1.5]])
    columns = [(QUERIES, "query"), (POSITIVES, "document"), (NEGATIVES, "document")]
    for temperature in (1.0, 2.0):
        loss = MultiVectorDistillKLDivLoss(ref, temperature=temperature)
        expected = loss([reference(ref, t, k) for t, k in columns], teacher)
        got = MultiVectorDistillLoss(temperature).forward_features([ours(model, t, k) for t, k in columns], teacher)
        assert abs(float(got) - float(expected)) <= 1e-5


def test_loss_gradients_reach_the_encoder(folder: Path) -> None:
    model = MultiVectorEncoder.load(folder, device="cpu")
    model.train()
    loss = MultiVectorContrastiveLoss().forward_features(
        [ours(model, QUERIES, "query"), ours(model, POSITIVES, "document")], None
    )
    loss.backward()
    grads = [p.grad for p in model.transformer.parameters() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)


def test_torch_maxsim_matches_the_packed_numpy_one() -> None:
    from sbert.vectors.maxsim import maxsim_matrix

    gen = torch.Generator().manual_seed(0)
    q, d = torch.randn(3, 5, 8, generator=gen), torch.randn(4, 7, 8, generator=gen)
    q_mask = torch.tensor([[1, 1, 1, 0, 0], [1] * 5, [1, 0, 0, 0, 0]]).bool()
    d_mask = torch.tensor([[1] * 7, [1, 1, 0, 0, 0, 0, 0], [0] * 7, [1, 1, 1, 1, 0, 0, 0]]).bool()
    expected = maxsim_matrix([q[i][q_mask[i]].numpy() for i in range(3)], [d[j][d_mask[j]].numpy() for j in range(4)])
    torch.testing.assert_close(maxsim_scores(q, q_mask, d, d_mask), torch.from_numpy(expected), atol=1e-5, rtol=0)


def test_cached_contrastive_loss_equals_the_plain_one_and_the_reference(folder: Path) -> None:
    from sentence_transformers import MultiVectorEncoder as Reference
    from sentence_transformers.multi_vector_encoder.losses import CachedMultiVectorMultipleNegativesRankingLoss

    from sbert.losses.multivector import CachedMultiVectorContrastiveLoss

    model = MultiVectorEncoder.load(folder, device="cpu")  # eval mode: no dropout, so both passes draw alike
    columns = [(QUERIES, "query"), (POSITIVES, "document"), (NEGATIVES, "document")]

    def pads(texts: list[str], task: str) -> dict[str, Any]:
        prompt = model.settings.resolve_prompt(task=task)
        return model._rules.pad(model.transformer, model._rules.token_ids(model.transformer, texts, task, prompt)[0],
                                task)  # fmt: skip

    def grads() -> list[torch.Tensor]:
        out = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        model.zero_grad()
        return out

    plain = MultiVectorContrastiveLoss(2.0).forward_features([model(pads(t, k)) for t, k in columns], None)
    plain.backward()
    want = grads()
    cached = CachedMultiVectorContrastiveLoss(2.0, mini_batch=2).forward_model(model, [pads(t, k) for t, k in columns],
                                                                               None)  # fmt: skip
    assert abs(float(cached) - float(plain)) <= 1e-6
    cached.backward()
    got = grads()
    assert len(got) == len(want) > 0
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    ref = Reference(str(folder), device="cpu")
    expected = CachedMultiVectorMultipleNegativesRankingLoss(ref, scale=2.0, mini_batch_size=2)(
        [reference(ref, t, k) for t, k in columns], None
    )
    assert abs(float(cached) - float(expected)) <= 1e-5
