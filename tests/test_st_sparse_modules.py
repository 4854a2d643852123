"""6.2's sparse scripts that build the model from modules: `SparseEncoder(modules=[...])` and its module paths.

SPLADE from a fill-mask Transformer (or the deprecated MLMTransformer) and SpladePooling, inference-free SPLADE
(a Router with a SparseStaticEmbedding query route), and CSR (a dense chain then a SparseAutoEncoder), each
built in both libraries from the same folder: the same sparse vectors, and sbert's save loads in 6.2.
"""

from __future__ import annotations

import importlib
import warnings

import datasets
import numpy as np
import pytest
import torch

import sbert
from sbert.errors import ModelFormatError, SbertError
from tests.st_training_fixtures import tiny_splade_folder
from tests.tiny_models import build_bert

st = pytest.importorskip("sentence_transformers")
from tests.test_st_training_kinds import arguments, tables, train  # noqa: E402  (needs sentence-transformers)

TEXTS = ["a dog runs in the park", "the cat sleeps", "rain falls on the old town"]


def modules(lib):
    return importlib.import_module(f"{lib.__name__}.sparse_encoder.modules")


def splade(lib, mlm_folder, how="task"):
    m = modules(lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 6.2's MLMTransformer deprecation
        mlm = (m.Transformer(str(mlm_folder), transformer_task="fill-mask") if how == "task"
               else m.MLMTransformer(str(mlm_folder)))  # fmt: skip
    return mlm, m.SpladePooling(pooling_strategy="max")


def dense(vectors):
    return (vectors.to_dense() if vectors.is_sparse else vectors).numpy()


@pytest.mark.parametrize("how", ["task", "mlm-transformer"])
def test_splade_built_from_modules_encodes_and_saves_as_6_2(how, tmp_path):
    tiny_splade_folder(tmp_path)
    ref = st.SparseEncoder(modules=list(splade(st, tmp_path / "mlm", how)), device="cpu")
    ours = sbert.SparseEncoder(modules=list(splade(sbert, tmp_path / "mlm", how)), device="cpu")
    np.testing.assert_allclose(dense(ours.encode(TEXTS)), dense(ref.encode(TEXTS)), atol=1e-5)
    assert ours.get_embedding_dimension() == ref.get_embedding_dimension()
    ours.save(str(tmp_path / "saved"))
    reloaded = st.SparseEncoder(str(tmp_path / "saved"), device="cpu")
    np.testing.assert_allclose(dense(reloaded.encode(TEXTS)), dense(ref.encode(TEXTS)), atol=1e-5)


def test_inference_free_splade_built_from_a_router_encodes_as_6_2(tmp_path):
    tiny_splade_folder(tmp_path)
    built = {}
    for lib in (st, sbert):
        m = modules(lib)
        mlm, pooling = splade(lib, tmp_path / "mlm")
        weight = torch.linspace(0.1, 2.0, len(mlm.tokenizer.get_vocab()))
        router = m.Router.for_query_document(
            query_modules=[m.SparseStaticEmbedding(tokenizer=mlm.tokenizer, weight=weight, frozen=False)],
            document_modules=[mlm, pooling],
        )
        built[lib] = lib.SparseEncoder(modules=[router], device="cpu")
    for side in ("encode_query", "encode_document"):
        ours, ref = getattr(built[sbert], side)(TEXTS), getattr(built[st], side)(TEXTS)
        np.testing.assert_allclose(dense(ours), dense(ref), atol=1e-5, err_msg=side)
    built[sbert].save(str(tmp_path / "saved"))
    reloaded = st.SparseEncoder(str(tmp_path / "saved"), device="cpu")
    np.testing.assert_allclose(dense(reloaded.encode_query(TEXTS)), dense(built[st].encode_query(TEXTS)), atol=1e-5)


def test_sparse_static_embedding_starts_at_one_per_token_as_6_2(tmp_path):
    tiny_splade_folder(tmp_path)
    mlm, _ = splade(sbert, tmp_path / "mlm")
    theirs = modules(st).SparseStaticEmbedding(tokenizer=mlm.tokenizer)
    ours = modules(sbert).SparseStaticEmbedding(tokenizer=mlm.tokenizer)
    assert torch.equal(ours.weight, theirs.weight) and ours.weight.requires_grad


def test_csr_built_from_modules_encodes_as_6_2(tmp_path):
    bert = build_bert(tmp_path / "bert")
    built = {}
    for lib in (st, sbert):
        m = importlib.import_module(f"{lib.__name__}.sentence_transformer.modules")
        transformer = m.Transformer(str(bert))
        pooling = m.Pooling(transformer.get_embedding_dimension(), "mean")
        sae = modules(lib).SparseAutoEncoder(input_dim=transformer.get_embedding_dimension(), hidden_dim=64, k=8)
        built[lib] = lib.SparseEncoder(modules=[transformer, pooling, sae], device="cpu")
    state = dict(built[st][-1].state_dict())  # the same random autoencoder in both (6.2 keeps the tied weight once)
    state["encoder.weight"] = state.pop("decoder.linear.weight")
    built[sbert].sae.load_state_dict(state)
    np.testing.assert_allclose(dense(built[sbert].encode(TEXTS)), dense(built[st].encode(TEXTS)), atol=1e-5)


def test_splade_built_from_modules_trains_as_6_2(tmp_path):
    tiny_splade_folder(tmp_path)

    def run(lib, out):
        model = lib.SparseEncoder(modules=list(splade(lib, tmp_path / "mlm")), device="cpu")
        losses = importlib.import_module(f"{lib.__name__}.sparse_encoder.losses")
        loss = losses.SpladeLoss(model, losses.SparseMultipleNegativesRankingLoss(model), 3e-3, 5e-3)
        trainer = importlib.import_module(f"{lib.__name__}.sparse_encoder").SparseEncoderTrainer(
            model=model, args=arguments(lib, out, "sparse_encoder"),
            train_dataset=datasets.Dataset.from_dict(tables()["pair"]), loss=loss,
        )  # fmt: skip
        return train(trainer), model

    ref_losses, ref = run(st, tmp_path / "st")
    our_losses, ours = run(sbert, tmp_path / "sbert")
    assert len(our_losses) == 2 and our_losses == pytest.approx(ref_losses, rel=1e-3)
    # Trained weights agree as closely as the losses do: AdamW moves a weight whose gradient is ~0 by a full step
    # in its gradient's sign, which the two libraries' op orders (and the process's thread settings) can flip
    # (one vocabulary dimension 1.4e-4 / 0.16% apart in one CI run, equal in others).
    np.testing.assert_allclose(dense(ours.encode(TEXTS)), dense(ref.encode(TEXTS)), rtol=1e-3, atol=1e-4)


def test_a_chain_sparse_encoder_cannot_run_gets_one_line(tmp_path):
    tiny_splade_folder(tmp_path)
    m = modules(sbert)
    plain = m.Transformer(str(tmp_path / "mlm"))  # feature-extraction: hidden states, not MLM logits
    with pytest.raises(ModelFormatError, match='transformer_task="fill-mask"'):
        sbert.SparseEncoder(modules=[plain, m.SpladePooling()])
    with pytest.raises(ModelFormatError, match="expected an MLM Transformer then SpladePooling"):
        sbert.SparseEncoder(modules=[plain])
    with pytest.raises(SbertError, match="modality_config"):
        m.Transformer(str(tmp_path / "mlm"), transformer_task="fill-mask", modality_config={"text": {}})
