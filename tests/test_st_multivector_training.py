"""sentence-transformers' ColBERT training script (`MultiVectorEncoderTrainer` and its losses) on sbert's engine.

Both libraries train the same sentence-transformers MultiVectorEncoder folder (a tiny BERT with dropout off, so
steps are deterministic) for two steps on the same 8 rows: the logged losses agree (rel 1e-3), so do the trained
token vectors, and sbert's saved folder loads in sentence-transformers with them.
"""

from __future__ import annotations

import importlib
import warnings

import datasets
import numpy as np
import pytest

import sbert
from sbert.errors import SbertError
from tests.colbert_fixtures import build_native, build_punctuated_bert
from tests.st_training_fixtures import ROWS, tables

st = pytest.importorskip("sentence_transformers")

EXPANSION = {"strategy": "fixed", "attend": False, "length": 16}
NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
TEXTS = ["a man is playing a guitar.", "why, a dog?"]
LOSSES = {
    "default": ("pair", None),
    "mnrl-scale": ("triplet", lambda ls, m: ls.MultiVectorMultipleNegativesRankingLoss(m, scale=2.0)),
    "cached": ("triplet", lambda ls, m: ls.CachedMultiVectorMultipleNegativesRankingLoss(m, mini_batch_size=3)),
    "distill": ("teacher-scores", lambda ls, m: ls.MultiVectorDistillKLDivLoss(m, temperature=2.0)),
    "margin-mse": ("margins", lambda ls, m: ls.MultiVectorMarginMSELoss(m)),
    # 6.3's Matryoshka on token vectors (8 wide here), around a plain and a cached objective
    "matryoshka": (
        "triplet",
        lambda ls, m: ls.MultiVectorMatryoshkaLoss(
            m, ls.MultiVectorMultipleNegativesRankingLoss(m), [4, 8, 2], [0.5, 1, 0.25]
        ),
    ),
    "matryoshka-cached": (
        "triplet",
        lambda ls, m: ls.MultiVectorMatryoshkaLoss(
            m, ls.CachedMultiVectorMultipleNegativesRankingLoss(m, mini_batch_size=3), [8, 4]
        ),
    ),
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    base = tmp_path_factory.mktemp("mv-dropin-train")
    return build_native(build_punctuated_bert(base / "bert"), base / "colbert", query_length=16, document_length=24,
                        query_expansion=EXPANSION, config_kwargs=NO_DROPOUT)  # fmt: skip


def run(lib, folder, out, table, make_loss):
    package = importlib.import_module(f"{lib.__name__}.multi_vector_encoder")
    model = package.MultiVectorEncoder(str(folder), device="cpu")
    losses = importlib.import_module(f"{lib.__name__}.multi_vector_encoder.losses")
    args = package.MultiVectorEncoderTrainingArguments(
        output_dir=str(out), num_train_epochs=2, per_device_train_batch_size=ROWS, learning_rate=1e-3,
        logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True,
    )  # fmt: skip
    trainer = package.MultiVectorEncoderTrainer(model=model, args=args, train_dataset=datasets.Dataset.from_dict(
        tables()[table]), loss=make_loss(losses, model) if make_loss else None)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()
    return [e["loss"] for e in trainer.state.log_history if "loss" in e], model


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_colbert_script_trains_as_sentence_transformers(name, folder, tmp_path):
    table, make_loss = LOSSES[name]
    ref_losses, ref = run(st, folder, tmp_path / "st", table, make_loss)
    our_losses, ours = run(sbert, folder, tmp_path / "sbert", table, make_loss)
    assert len(our_losses) == len(ref_losses) == 2
    assert our_losses == pytest.approx(ref_losses, rel=1e-3)
    for a, b in zip(ours.encode_query(TEXTS), ref.encode_query(TEXTS), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-4)
    ours.save(str(tmp_path / "trained"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reloaded = st.MultiVectorEncoder(str(tmp_path / "trained"), device="cpu")
    for a, b in zip(reloaded.encode_document(TEXTS), ours.encode_document(TEXTS), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5)


def test_colbert_losses_refuse_what_sbert_does_not_score(folder):
    model = sbert.MultiVectorEncoder(str(folder), device="cpu")
    losses = sbert.multi_vector_encoder.losses
    with pytest.raises(SbertError, match="scores by MaxSim"):
        losses.MultiVectorMultipleNegativesRankingLoss(model, similarity_fct=lambda *a, **k: None)
    with pytest.raises(SbertError, match="mini_batch_num_tokens"):
        losses.CachedMultiVectorMultipleNegativesRankingLoss(model, mini_batch_num_tokens=512)
    inner = losses.MultiVectorMultipleNegativesRankingLoss(model)
    with pytest.raises(ValueError, match="cannot exceed the model's embedding dimension of 8"):
        losses.MultiVectorMatryoshkaLoss(model, inner, [16, 8])
    with pytest.raises(ValueError, match="at least one dimension"):
        losses.MultiVectorMatryoshkaLoss(model, inner, [])
    with pytest.raises(SbertError, match="wraps a multi-vector loss"):
        losses.MultiVectorMatryoshkaLoss(model, sbert.losses.MultipleNegativesRankingLoss(model), [8])


def test_6_2s_max_length_is_named_among_the_fields_the_engine_does_not_use(tmp_path):
    from sbert.compat.args_map import unused_fields

    assert unused_fields(sbert.MultiVectorEncoderTrainingArguments(output_dir=str(tmp_path))) == []
    assert unused_fields(sbert.MultiVectorEncoderTrainingArguments(output_dir=str(tmp_path), max_length=32)) == [
        "max_length"
    ]


def test_token_matryoshka_equals_sentence_transformers_on_the_same_batch(folder):
    """The same token matrices through both libraries' MultiVectorMatryoshkaLoss: equal loss and gradients."""
    import torch

    from sbert.multivector.tokens import SCORED

    scorer = st.MultiVectorEncoder(str(folder), device="cpu")
    torch.manual_seed(0)
    columns = [torch.randn(6, 5, 8, requires_grad=True) for _ in range(3)]  # queries, positives, negatives
    masks = [torch.rand(6, 5) > 0.3 for _ in range(3)]
    for mask in masks:
        mask[:, 0] = True  # every text keeps a scored token
    dims, weights = [2, 8, 4], [0.25, 1.0, 0.5]

    class Fixed(torch.nn.Module):  # hands the fixed token matrices to sentence-transformers' losses
        def forward(self, features, task=None):
            return {"token_embeddings": features["v"], "attention_mask": features["m"]}

        def similarity(self, *args, **kwargs):
            return scorer.similarity(*args, **kwargs)

        def _get_untruncated_embedding_dimension(self):
            return 8

    fixed = Fixed()
    theirs = importlib.import_module("sentence_transformers.multi_vector_encoder.losses")
    reference = theirs.MultiVectorMatryoshkaLoss(fixed, theirs.MultiVectorMultipleNegativesRankingLoss(fixed),
                                                 dims, weights)  # fmt: skip
    want = reference([{"v": c, "m": m} for c, m in zip(columns, masks, strict=True)], None)
    ours = importlib.import_module("sbert.multi_vector_encoder.losses")
    loss = ours.MultiVectorMatryoshkaLoss(None, ours.MultiVectorMultipleNegativesRankingLoss(), dims, weights)
    got = loss.forward_features([{"token_embeddings": c, SCORED: m} for c, m in zip(columns, masks, strict=True)], None)
    assert float(got) == pytest.approx(float(want), abs=1e-6)
    for a, b in zip(torch.autograd.grad(got, columns), torch.autograd.grad(want, columns), strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    assert loss.get_config_dict() == {**reference.get_config_dict(), "matryoshka_dims": (8, 4, 2),
                                      "matryoshka_weights": (1.0, 0.5, 0.25)}  # fmt: skip
