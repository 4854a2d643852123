"""6.2's CSR training script (`CSRLoss` through `SparseEncoderTrainer`) on sbert's engine: 6.2's losses and vectors.

The CSR folder (a tiny BERT, mean pooling, a SparseAutoEncoder) is built and saved by 6.2; both libraries
train it for two steps on the same table: the logged losses agree (rel 1e-3), so do the trained codes,
and sbert's saved folder loads in 6.2 with them.
"""

from __future__ import annotations

import importlib
import warnings

import datasets
import numpy as np
import pytest
import torch

import sbert
from sbert.errors import SbertError
from tests.st_training_fixtures import tables
from tests.tiny_models import build_bert

st = pytest.importorskip("sentence_transformers")
from tests.test_st_training_kinds import arguments, train  # noqa: E402  (needs sentence-transformers)

TEXTS = ["a dog runs in the park", "the cat sleeps", "rain falls on the old town"]


def csr_folder(tmp_path, **sae):
    from sentence_transformers.sentence_transformer import modules

    transformer = modules.Transformer(
        str(build_bert(tmp_path / "bert")),
        config_kwargs={"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0},
    )
    width = transformer.get_embedding_dimension()
    torch.manual_seed(3)
    autoencoder = st.sparse_encoder.modules.SparseAutoEncoder(
        input_dim=width, **{"hidden_dim": 64, "k": 4, "k_aux": 32, **sae}
    )
    out = tmp_path / "csr"
    st.SparseEncoder(modules=[transformer, modules.Pooling(width, "mean"), autoencoder], device="cpu").save(str(out))
    return out


def run(lib, folder, out, table="pair", make=None):
    model = lib.SparseEncoder(str(folder), device="cpu")
    losses = importlib.import_module(f"{lib.__name__}.sparse_encoder.losses")
    loss = make(losses, model) if make else losses.CSRLoss(model)
    trainer = importlib.import_module(f"{lib.__name__}.sparse_encoder").SparseEncoderTrainer(
        model=model, args=arguments(lib, out, "sparse_encoder"),
        train_dataset=datasets.Dataset.from_dict(tables()[table]), loss=loss,
    )  # fmt: skip
    return train(trainer), model


def dense(vectors):
    return vectors.to_dense().numpy()


CASES = {
    "default": ({}, "pair", None),
    # dead_threshold 0: every latent silent in a forward is dead at once, so the auxiliary term is live
    "dead-latents": ({"dead_threshold": 0, "k_aux": 16}, "triplet", lambda ls, m: ls.CSRLoss(m, beta=0.5, gamma=2.0)),
    "normalize": ({"normalize": True, "k_aux": 32, "dead_threshold": 1}, "pair", None),
    "cosent": ({}, "score", lambda ls, m: ls.CSRLoss(m, loss=ls.SparseCoSENTLoss(m))),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_csr_script_trains_as_sentence_transformers(case, tmp_path):
    sae, table, make = CASES[case]
    folder = csr_folder(tmp_path, **sae)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref_losses, ref = run(st, folder, tmp_path / "st", table, make)
        our_losses, ours = run(sbert, folder, tmp_path / "sbert", table, make)
    assert len(our_losses) == len(ref_losses) == 2
    assert our_losses == pytest.approx(ref_losses, rel=1e-3)
    # rel 1e-3 as the losses: AdamW moves a weight whose gradient is ~0 by a whole step in that gradient's
    # sign, which the two libraries' op orders can flip (test_st_sparse_modules.py met one such flip).
    np.testing.assert_allclose(dense(ours.encode(TEXTS)), dense(ref.encode(TEXTS)), rtol=1e-3, atol=1e-4)
    ours.save(str(tmp_path / "trained"))
    reloaded = st.SparseEncoder(str(tmp_path / "trained"), device="cpu")
    np.testing.assert_allclose(dense(reloaded.encode(TEXTS)), dense(ours.encode(TEXTS)), atol=1e-5)


def test_csr_loss_refuses_what_it_cannot_train(tmp_path):
    folder = csr_folder(tmp_path)
    model = sbert.SparseEncoder(str(folder), device="cpu")
    losses = sbert.sparse_encoder.losses
    with pytest.raises(SbertError, match="sentence-vector loss"):
        losses.CSRLoss(model, loss=sbert.losses.CachedMultipleNegativesRankingLoss(model))
    with pytest.raises(NotImplementedError, match="within CSRLoss"):
        losses.CSRReconstructionLoss(model)([], None)
    dense_model = sbert.SentenceTransformer(modules=list(model.dense.chain()), device="cpu")
    trainer = sbert.SentenceTransformerTrainer(model=dense_model, train_dataset=datasets.Dataset.from_dict(
        tables()["pair"]), loss=losses.CSRLoss(dense_model))  # fmt: skip
    with pytest.raises(SbertError, match="ending in a SparseAutoEncoder"):
        trainer.train()
