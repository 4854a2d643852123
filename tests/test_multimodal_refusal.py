"""Image-text models are refused in one line naming what they read, not with a crash inside the chain;
a text model given an image answers sentence-transformers 6.2's ValueError."""

from __future__ import annotations

import numpy as np
import pytest

import sbert
from sbert.cli.main import main
from sbert.errors import ModelFormatError
from tests.multimodal_fixtures import legacy_clip, st_clip, tiny_clip
from tests.st_training_fixtures import tiny_st_folder

pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("multimodal")
    clip = tiny_clip(base)
    return {"hf": clip, "st": st_clip(clip, base / "st"), "legacy": legacy_clip(base / "legacy")}


@pytest.mark.parametrize("layout", ["hf", "st", "legacy"])
def test_an_image_text_model_is_refused_in_one_line(folders, layout):
    for load in (sbert.load, sbert.SentenceTransformer):
        with pytest.raises(ModelFormatError, match=r"CLIPModel.* embeds more than text") as caught:
            load(str(folders[layout]))
        assert "\n" not in str(caught.value)


def test_serving_an_image_text_model_exits_with_the_line(folders, capsys):
    assert main(["serve", "--model", str(folders["st"])]) == 2  # before any socket is opened
    err = capsys.readouterr().err
    assert "embeds more than text" in err and len(err.strip().splitlines()) == 1, err


def test_a_text_model_refuses_an_image_as_6_2_does(tmp_path):
    from PIL import Image

    model = sbert.SentenceTransformer(str(tiny_st_folder(tmp_path)), device="cpu")
    for given in ([Image.new("RGB", (8, 8))], ["text", {"image": "photo.png"}], [np.zeros((8, 8, 3), np.uint8)]):
        with pytest.raises(ValueError, match="Modality 'image' is not supported by this model"):
            model.encode(given)
    with pytest.raises(TypeError, match="expected str"):
        model.encode([3])
