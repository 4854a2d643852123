"""`trainer.evaluate()` with an eval_dataset gives `eval_loss` as sentence-transformers 6.3's trainer does:
the training loss on the eval table, without a gradient, on the same folder."""

from __future__ import annotations

import warnings

import pytest

from tests.st_training_fixtures import tables, tiny_st_folder

st = pytest.importorskip("sentence_transformers")
datasets = pytest.importorskip("datasets")

CASES = [("pair", "MultipleNegativesRankingLoss"), ("score", "CoSENTLoss"), ("triplet", "TripletLoss")]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tiny_st_folder(tmp_path_factory.mktemp("eval-loss"))


def eval_metrics(library, folder, table, loss_name, output, batch=8):
    import importlib

    losses = importlib.import_module(f"{library.__name__}.sentence_transformer.losses")
    model = library.SentenceTransformer(str(folder), device="cpu")
    loss = getattr(losses, loss_name)(model)
    data = datasets.Dataset.from_dict(tables()[table])
    args = library.SentenceTransformerTrainingArguments(output_dir=str(output), per_device_eval_batch_size=batch,
                                                        report_to="none", use_cpu=True)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = library.SentenceTransformerTrainer(model=model, args=args, train_dataset=data, eval_dataset=data,
                                                     loss=loss)  # fmt: skip
        return trainer.evaluate()


@pytest.mark.parametrize(("table", "loss_name"), CASES)
def test_eval_loss_is_the_references(folder, tmp_path, table, loss_name):
    import sbert

    want = eval_metrics(st, folder, table, loss_name, tmp_path / "st")
    got = eval_metrics(sbert, folder, table, loss_name, tmp_path / "sbert")
    assert got["eval_loss"] == pytest.approx(want["eval_loss"], abs=1e-5)


def test_a_row_wise_loss_over_uneven_batches_averages_by_rows(folder, tmp_path):
    # 8 rows in batches of 3, 3 and 2. (A loss over in-batch candidates depends on which rows share a batch:
    # 6.3 draws its eval batches with its seeded batch sampler, sbert takes the table's order.)
    import sbert

    want = eval_metrics(st, folder, "triplet", "TripletLoss", tmp_path / "st", batch=3)
    got = eval_metrics(sbert, folder, "triplet", "TripletLoss", tmp_path / "sbert", batch=3)
    assert got["eval_loss"] == pytest.approx(want["eval_loss"], abs=1e-5)
