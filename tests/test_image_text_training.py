"""Fine-tuning an image-text model on (image, caption) rows through the drop-in trainer, on sbert's engine:
sentence-transformers 6.2's own trainer runs the same script, the logged losses agree, the contrastive loss
goes down, and the trained folder loads in sentence-transformers with sbert's vectors."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest
import torch

import sbert
from sbert.errors import SbertError
from tests.multimodal_fixtures import saved_clip
from tests.st_training_fixtures import tiny_st_folder

st = pytest.importorskip("sentence_transformers")
datasets = pytest.importorskip("datasets")
Image = pytest.importorskip("PIL.Image")

pytestmark = pytest.mark.reference
CAPTIONS = ["a red square", "a green field", "a blue sky", "a dark night", "a yellow sun", "a white wall"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    base = tmp_path_factory.mktemp("clip-train")
    return saved_clip(base)


def table() -> dict[str, list]:
    """One plain-coloured photo per caption, in the (image, caption) column order."""
    colours = [(200, 30, 30), (30, 160, 40), (40, 90, 220), (10, 10, 20), (240, 220, 30), (250, 250, 250)]
    rng = np.random.default_rng(0)
    images = [Image.fromarray(np.clip(np.array(c) + rng.normal(0, 8, (36, 36, 3)), 0, 255).astype("uint8"))
              for c in colours]  # fmt: skip
    return {"image": images, "caption": CAPTIONS}


def train(lib, folder, out, epochs=2):
    model = lib.SentenceTransformer(str(folder), device="cpu")
    loss = importlib.import_module(f"{lib.__name__}.losses").MultipleNegativesRankingLoss(model)
    args = lib.SentenceTransformerTrainingArguments(
        output_dir=str(out), num_train_epochs=epochs, per_device_train_batch_size=len(CAPTIONS), learning_rate=1e-3,
        logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True,
    )  # fmt: skip
    trainer = lib.SentenceTransformerTrainer(model=model, args=args, train_dataset=datasets.Dataset.from_dict(table()),
                                             loss=loss)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()
    return [e["loss"] for e in trainer.state.log_history if "loss" in e], model


def test_an_image_caption_fine_tune_matches_6_2_and_round_trips(folder, tmp_path):
    ref_losses, _ = train(st, folder, tmp_path / "st")
    our_losses, model = train(sbert, folder, tmp_path / "sbert")
    assert len(our_losses) == len(ref_losses) == 2
    assert our_losses == pytest.approx(ref_losses, rel=1e-3)
    longer, _ = train(sbert, folder, tmp_path / "longer", epochs=6)
    assert longer[-1] < longer[0]  # the contrastive loss goes down
    model.save(str(tmp_path / "trained"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reloaded = st.SentenceTransformer(str(tmp_path / "trained"), device="cpu")
    np.testing.assert_allclose(reloaded.encode(table()["image"]), model.encode(table()["image"]), atol=1e-5)
    np.testing.assert_allclose(reloaded.encode(CAPTIONS), model.encode(CAPTIONS), atol=1e-5)
    before = sbert.SentenceTransformer(str(folder), device="cpu")
    assert not torch.allclose(torch.from_numpy(before.encode(CAPTIONS)), torch.from_numpy(model.encode(CAPTIONS)))


def test_a_text_model_refuses_an_image_table_in_one_line(tmp_path):
    model = sbert.SentenceTransformer(str(tiny_st_folder(tmp_path)), device="cpu")
    trainer = sbert.SentenceTransformerTrainer(model=model, train_dataset=datasets.Dataset.from_dict(table()),
                                               args=sbert.SentenceTransformerTrainingArguments(
                                                   output_dir=str(tmp_path / "out"), report_to="none"))  # fmt: skip
    with pytest.raises(SbertError, match="holds images: train an image-text model"):
        trainer.train()
