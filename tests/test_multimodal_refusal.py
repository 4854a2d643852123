"""Multimodal models sbert does not run (video, chat-message VLMs, *ForRetrieval) are refused in one line naming
read, not with a crash inside the chain; a text model given an image answers sentence-transformers 6.2's ValueError.
(Two-tower image-text models load: tests/test_image_text.py.)"""

from __future__ import annotations

import json

import numpy as np
import pytest

import sbert
from sbert.cli.main import main
from sbert.errors import ModelFormatError
from tests.multimodal_fixtures import saved_clip
from tests.st_training_fixtures import tiny_st_folder

pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def video_folder(tmp_path_factory):
    """An image-text folder whose modality_config also reads video: a kind sbert does not run."""
    base = tmp_path_factory.mktemp("multimodal")
    folder = saved_clip(base)
    config = json.loads((folder / "sentence_bert_config.json").read_text())
    config["modality_config"]["video"] = {"method": "get_video_features", "method_output_name": "pooler_output"}
    (folder / "sentence_bert_config.json").write_text(json.dumps(config))
    return folder


def test_an_unsupported_multimodal_model_is_refused_in_one_line(video_folder):
    for load in (sbert.load, sbert.SentenceTransformer):
        with pytest.raises(ModelFormatError, match=r"video.* is not a model sbert runs yet") as caught:
            load(str(video_folder))
        assert "\n" not in str(caught.value)


def test_serving_it_exits_with_the_line(video_folder, capsys):
    assert main(["serve", "--model", str(video_folder)]) == 2  # before any socket is opened
    err = capsys.readouterr().err
    assert "is not a model sbert runs yet" in err and len(err.strip().splitlines()) == 1, err


def test_a_text_model_refuses_an_image_as_6_2_does(tmp_path):
    from PIL import Image

    model = sbert.SentenceTransformer(str(tiny_st_folder(tmp_path)), device="cpu")
    for given in ([Image.new("RGB", (8, 8))], ["text", {"image": "photo.png"}], [np.zeros((8, 8, 3), np.uint8)]):
        with pytest.raises(ValueError, match="Modality 'image' is not supported by this model"):
            model.encode(given)
    with pytest.raises(TypeError, match="expected str"):
        model.encode([3])
