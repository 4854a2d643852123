"""Training scripts written for sentence-transformers 6.2, run on sbert with the import changed.

The same script runs against both libraries in one process, from the same saved folder (dropout off):
the first logged loss agrees (1e-3 relative), the trained vectors agree, and sbert's trained folder
loads in sentence-transformers with sbert's vectors.
"""

from __future__ import annotations

import importlib
import random
import warnings

import numpy as np
import pytest
import torch

import sbert
from sbert.losses import MultipleNegativesRankingLoss
from tests.st_training_fixtures import ROWS, tables, tiny_st_folder

st = pytest.importorskip("sentence_transformers")
datasets = pytest.importorskip("datasets")

pytestmark = pytest.mark.reference


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tiny_st_folder(tmp_path_factory.mktemp("st-train"))


def guide(model, max_seq_length=None):
    """A GIST guide: the model's own folder loaded again (frozen); a shorter limit makes the loss re-tokenize."""
    source = getattr(model, "source_dir", None) or model[0].auto_model.name_or_path
    loaded = type(model)(str(source), device="cpu")  # the model's own library
    if max_seq_length is not None:
        loaded.max_seq_length = max_seq_length
    return loaded


# (table, loss built from a library's `losses` module and the model)
LOSSES = {
    "mnrl": ("pair", lambda lib, m: lib.MultipleNegativesRankingLoss(m)),
    "mnrl-triplet": ("triplet", lambda lib, m: lib.MultipleNegativesRankingLoss(m, scale=10.0)),
    "cached-mnrl": ("pair", lambda lib, m: lib.CachedMultipleNegativesRankingLoss(m, mini_batch_size=3)),
    "cosent": ("score", lambda lib, m: lib.CoSENTLoss(m)),
    "cosine": ("score", lambda lib, m: lib.CosineSimilarityLoss(m)),
    "softmax": ("class", lambda lib, m: lib.SoftmaxLoss(m, m.get_sentence_embedding_dimension(), 3)),
    "triplet": ("triplet", lambda lib, m: lib.TripletLoss(m)),
    "triplet-cosine": (
        "triplet",
        lambda lib, m: lib.TripletLoss(m, lib.TripletDistanceMetric.COSINE, triplet_margin=0.5),
    ),
    "matryoshka": ("pair", lambda lib, m: lib.MatryoshkaLoss(m, lib.MultipleNegativesRankingLoss(m), [32, 16, 8])),
    "mse": ("teacher", lambda lib, m: lib.MSELoss(m)),
    "adaptive-layer": (
        "pair",
        lambda lib, m: lib.AdaptiveLayerLoss(
            m, lib.MultipleNegativesRankingLoss(m), n_layers_per_step=-1, layer_weighting="log"
        ),
    ),
    "adaptive-layer-cosent": (
        "score",
        lambda lib, m: lib.AdaptiveLayerLoss(m, lib.CoSENTLoss(m), kl_temperature=0.0, layer_weighting="linear"),
    ),
    "denoising": ("pair", lambda lib, m: lib.DenoisingAutoEncoderLoss(m)),
    "matryoshka-2d": ("pair", lambda lib, m: lib.Matryoshka2dLoss(m, lib.MultipleNegativesRankingLoss(m), [32, 16, 8])),
    "contrastive": ("binary", lambda lib, m: lib.ContrastiveLoss(m)),
    "contrastive-euclidean": (
        "binary",
        lambda lib, m: lib.ContrastiveLoss(m, lib.SiameseDistanceMetric.EUCLIDEAN, margin=2.0, size_average=False),
    ),
    "online-contrastive": ("binary", lambda lib, m: lib.OnlineContrastiveLoss(m, margin=0.9)),
    "mnrl-symmetric": ("pair", lambda lib, m: lib.MultipleNegativesSymmetricRankingLoss(m)),
    "cached-mnrl-symmetric": (
        "pair",
        lambda lib, m: lib.CachedMultipleNegativesSymmetricRankingLoss(m, mini_batch_size=3),
    ),
    "gist": ("pair", lambda lib, m: lib.GISTEmbedLoss(m, guide(m))),
    "gist-triplet-relative": (
        "triplet",
        lambda lib, m: lib.GISTEmbedLoss(m, guide(m), temperature=0.05, margin_strategy="relative", margin=0.1),
    ),
    "gist-retokenized": ("pair", lambda lib, m: lib.GISTEmbedLoss(m, guide(m, 12), contrast_anchors=False)),
    "cached-gist": ("triplet", lambda lib, m: lib.CachedGISTEmbedLoss(m, guide(m), mini_batch_size=3)),
    "contrastive-tension": ("binary", lambda lib, m: lib.ContrastiveTensionLoss(m)),
    "contrastive-tension-in-batch": ("texts", lambda lib, m: lib.ContrastiveTensionLossInBatchNegatives(m)),
    "gor": ("pair", lambda lib, m: lib.GlobalOrthogonalRegularizationLoss(m)),
    "gor-sum": ("pair", lambda lib, m: lib.GlobalOrthogonalRegularizationLoss(m, mean_weight=0.5, aggregation="sum")),
    "mega-batch": ("pair", lambda lib, m: lib.MegaBatchMarginLoss(m, mini_batch_size=3)),
    "mega-batch-plain": ("pair", lambda lib, m: lib.MegaBatchMarginLoss(m, use_mini_batched_version=False)),
    "angle": ("score", lambda lib, m: lib.AnglELoss(m)),
    "margin-mse": ("margins", lambda lib, m: lib.MarginMSELoss(m)),
    "margin-mse-scores": ("teacher-scores", lambda lib, m: lib.MarginMSELoss(m)),
    "distill-kl": ("teacher-scores", lambda lib, m: lib.DistillKLDivLoss(m, temperature=2.0)),
    "batch-hard": ("labelled", lambda lib, m: lib.BatchHardTripletLoss(m)),
    "batch-hard-soft": ("labelled", lambda lib, m: lib.BatchHardSoftMarginTripletLoss(m)),
    "batch-all": ("labelled", lambda lib, m: lib.BatchAllTripletLoss(m, margin=0.5)),
    "batch-semi-hard": ("labelled", lambda lib, m: lib.BatchSemiHardTripletLoss(m, margin=0.1)),
    "batch-hard-cosine": (
        "labelled",
        lambda lib, m: lib.BatchHardTripletLoss(m, lib.BatchHardTripletLossDistanceFunction.cosine_distance, 0.2),
    ),
}


# Losses that draw layers or dims with Python's random each step.
DRAWN = {"adaptive-layer-cosent", "matryoshka-2d"}


def run_script(lib, folder, out, table, make_loss, **extra):
    """The Training Overview's script: model, dataset, loss, arguments, trainer.train(); returns (trainer, model)."""
    model = lib.SentenceTransformer(str(folder), device="cpu")
    torch.manual_seed(0)  # a loss with a head (softmax) starts from the same weights in both
    loss = make_loss(importlib.import_module(f"{lib.__name__}.losses"), model)
    args = lib.SentenceTransformerTrainingArguments(
        output_dir=str(out), num_train_epochs=2, per_device_train_batch_size=ROWS, learning_rate=1e-3,
        logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True, **extra,
    )  # fmt: skip
    trainer = lib.SentenceTransformerTrainer(model=model, args=args, train_dataset=datasets.Dataset.from_dict(table),
                                             loss=loss)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()
    return trainer, model


def losses_logged(trainer):
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]


# make test keeps MNRL, CoSENT, CosineSimilarity, GIST and MarginMSE; `make test-e2e` (CI runs both) the rest,
# so that make test stays within its time budget.
VARIANTS = {"gist-triplet-relative", "gist-retokenized", "gor-sum", "mega-batch-plain", "cached-mnrl-symmetric",
            "mnrl-triplet", "triplet-cosine", "contrastive-euclidean", "online-contrastive", "margin-mse-scores",
            "batch-hard-soft", "batch-all", "batch-semi-hard", "batch-hard-cosine", "contrastive-tension-in-batch",
            "mega-batch", "angle", "batch-hard", "cached-gist", "contrastive", "contrastive-tension", "distill-kl",
            "gor", "mnrl-symmetric", "softmax", "matryoshka", "triplet", "cached-mnrl", "mse"}  # fmt: skip


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.e2e) if n in VARIANTS else n for n in sorted(LOSSES)]
)
def test_script_trains_as_sentence_transformers(name, folder, tmp_path, monkeypatch):
    kind, make_loss = LOSSES[name]
    if name in DRAWN:
        # 6.2 draws from Python's random before the first step (its model card's widget texts): the draws
        # of layers and dims are made the same in both, the last k of each population, to compare the losses.
        monkeypatch.setattr(random, "sample", lambda population, k: list(population)[-k:])
    table = tables()[kind]
    ref_trainer, ref_model = run_script(st, folder, tmp_path / "st", table, make_loss)
    ours_trainer, ours_model = run_script(sbert, folder, tmp_path / "sbert", table, make_loss)
    ref_losses, our_losses = losses_logged(ref_trainer), losses_logged(ours_trainer)
    assert len(our_losses) == len(ref_losses) == 2
    assert our_losses[0] == pytest.approx(ref_losses[0], rel=1e-3)
    # Two steps on the one batch: the second loss follows the same update.
    assert our_losses[1] == pytest.approx(ref_losses[1], rel=1e-3)
    texts = tables()["pair"]["anchor"]
    ours, ref = ours_model.encode(texts), ref_model.encode(texts)
    moved = np.abs(ref - st.SentenceTransformer(str(folder), device="cpu").encode(texts)).max()
    # Adam turns float-rounding differences in near-zero gradients into lr-sized steps, so the gap is held against
    # how far the two steps moved the vectors rather than to a fixed tolerance.
    assert np.abs(ours - ref).max() <= 0.02 * moved, (np.abs(ours - ref).max(), moved)
    saved = tmp_path / "saved"
    ours_model.save_pretrained(str(saved))
    np.testing.assert_allclose(st.SentenceTransformer(str(saved), device="cpu").encode(texts), ours, atol=1e-5)


def test_legacy_fit_trains_as_sentence_transformers(folder, tmp_path):
    from torch.utils.data import DataLoader

    table = tables()["score"]
    vectors = []
    for lib in (st, sbert):
        model = lib.SentenceTransformer(str(folder), device="cpu")
        rows = zip(table["sentence1"], table["sentence2"], table["score"], strict=True)
        examples = [lib.InputExample(texts=[a, b], label=s) for a, b, s in rows]
        loader = DataLoader(examples, shuffle=True, batch_size=ROWS)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = importlib.import_module(f"{lib.__name__}.losses").CosineSimilarityLoss(model)
            model.fit(train_objectives=[(loader, loss)], epochs=2, warmup_steps=0,
                      optimizer_params={"lr": 1e-3}, show_progress_bar=False)  # fmt: skip
        vectors.append(model.encode(table["sentence1"]))
    before = st.SentenceTransformer(str(folder), device="cpu").encode(table["sentence1"])
    assert np.abs(vectors[0] - before).max() > 1e-3  # the reference did train
    np.testing.assert_allclose(vectors[1], vectors[0], atol=2e-4)


def test_legacy_multilingual_distillation_trains_as_sentence_transformers(folder, tmp_path):
    """make_multilingual.py's recipe: ParallelSentencesDataset labels each translation with the teacher's vector."""
    from torch.utils.data import DataLoader

    rows = [[a, p] for a, p in zip(tables()["pair"]["anchor"], tables()["pair"]["positive"], strict=True)]
    (tmp_path / "parallel.tsv").write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    vectors = []
    for lib in (st, sbert):
        student = lib.SentenceTransformer(str(folder), device="cpu")
        teacher = lib.SentenceTransformer(str(folder), device="cpu")
        data = lib.ParallelSentencesDataset(student, teacher, batch_size=4)
        data.load_data(str(tmp_path / "parallel.tsv"), weight=ROWS)
        assert len(data) == 2 * ROWS  # each source and its translation
        loader = DataLoader(data, shuffle=True, batch_size=len(data))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = importlib.import_module(f"{lib.__name__}.losses").MSELoss(student)
            student.fit(train_objectives=[(loader, loss)], epochs=1, warmup_steps=0, optimizer_params={"lr": 1e-3},
                        show_progress_bar=False)  # fmt: skip
        vectors.append(student.encode([p for _, p in rows]))
    before = st.SentenceTransformer(str(folder), device="cpu").encode([p for _, p in rows])
    assert np.abs(vectors[0] - before).max() > 1e-4  # the reference did train
    np.testing.assert_allclose(vectors[1], vectors[0], atol=2e-4)


def test_contrastive_tension_loader_feeds_fit(folder):
    sentences = [*tables()["pair"]["anchor"], *tables()["pair"]["positive"]]
    loader = sbert.losses.ContrastiveTensionDataLoader(list(sentences), batch_size=4, pos_neg_ratio=2)
    batches = list(loader)
    assert len(batches) == len(loader) == len(sentences) // 6
    assert [e.label for e in batches[0]] == [1, 0, 1, 0] and batches[0][0].texts[0] == batches[0][0].texts[1]
    model = sbert.SentenceTransformer(str(folder), device="cpu")
    before = model.encode(sentences)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(train_objectives=[(loader, sbert.losses.ContrastiveTensionLoss(model))], epochs=1,
                  warmup_steps=0, optimizer_params={"lr": 1e-3}, show_progress_bar=False)  # fmt: skip
    assert np.abs(model.encode(sentences) - before).max() > 1e-4
    with pytest.raises(ValueError, match="divisible"):
        sbert.losses.ContrastiveTensionDataLoader(sentences, batch_size=5, pos_neg_ratio=2)


def test_unsupported_loss_argument_is_one_line():
    with pytest.raises(importlib.import_module("sbert.errors").SbertError, match="directions"):
        importlib.import_module("sbert.losses").MultipleNegativesRankingLoss(
            None, directions=("query_to_doc", "doc_to_query")
        )


def test_ignored_arguments_warn_once(folder, tmp_path):
    model = sbert.SentenceTransformer(str(folder), device="cpu")
    args = sbert.SentenceTransformerTrainingArguments(output_dir=str(tmp_path), lr_scheduler_type="cosine",
                                                      adam_beta2=0.98)  # fmt: skip
    with pytest.warns(UserWarning, match="lr_scheduler_type='cosine'.*|adam_beta2") as caught:
        data = datasets.Dataset.from_dict(tables()["pair"])
        sbert.SentenceTransformerTrainer(model=model, args=args, train_dataset=data,
                                         loss=MultipleNegativesRankingLoss(model))  # fmt: skip
    assert len([w for w in caught if "no meaning" in str(w.message)]) == 1


def test_a_second_run_over_checkpoints_says_how_to_resume(folder, tmp_path):
    table = datasets.Dataset.from_dict(tables()["pair"])

    def trainer():
        model = sbert.SentenceTransformer(str(folder), device="cpu")
        args = sbert.SentenceTransformerTrainingArguments(
            output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_train_epochs=1, save_steps=1
        )
        return sbert.SentenceTransformerTrainer(model=model, args=args, train_dataset=table,
                                                loss=MultipleNegativesRankingLoss(model))  # fmt: skip

    assert trainer().train().global_step == 2
    with pytest.raises(sbert.errors.SbertError, match=r"resume_from_checkpoint=True"):
        trainer().train()
    assert trainer().train(resume_from_checkpoint=True).global_step == 2  # nothing left to do
