"""6.2's ColBERT training script (`MultiVectorEncoderTrainer` and its losses) on sbert's engine: 6.2's losses.

Both libraries train the same 6.2 MultiVectorEncoder folder (a tiny BERT with dropout off, so steps are
deterministic) for two steps on the same 8 rows: the logged losses agree (rel 1e-3), so do the trained
token vectors, and sbert's saved folder loads in 6.2 with them.
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


def test_6_2s_max_length_is_named_among_the_fields_the_engine_does_not_use(tmp_path):
    from sbert.compat.args_map import unused_fields

    assert unused_fields(sbert.MultiVectorEncoderTrainingArguments(output_dir=str(tmp_path))) == []
    assert unused_fields(sbert.MultiVectorEncoderTrainingArguments(output_dir=str(tmp_path), max_length=32)) == [
        "max_length"
    ]
