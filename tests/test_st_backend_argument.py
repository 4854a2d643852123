"""6.2's `backend="onnx"` / `"openvino"` constructor argument: the drop-in classes run that runtime by default.

sbert exports the graph beside the model once and checks it against torch; the vectors and scores are
6.2's torch ones within the graph runtimes' tolerance, and `get_backend()` says which runtime is in use.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import sbert
from sbert.errors import SbertError
from tests.st_training_fixtures import ANCHORS, POSITIVES, tiny_cross_encoder_folder, tiny_st_folder

st = pytest.importorskip("sentence_transformers")
pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
def test_a_sentence_transformer_built_with_a_backend_runs_it(backend, tmp_path):
    if backend == "openvino":
        pytest.importorskip("openvino")
    folder = shutil.copytree(tiny_st_folder(tmp_path), tmp_path / "copy")
    model = sbert.SentenceTransformer(str(folder), device="cpu", backend=backend)
    assert model.get_backend() == backend and not (folder / "onnx").exists()
    reference = st.SentenceTransformer(str(folder), device="cpu").encode(ANCHORS)
    np.testing.assert_allclose(model.encode(ANCHORS), reference, atol=1e-4)
    assert (folder / "onnx" / "model.onnx").is_file()  # the graph the runtime ran, exported beside the model


def test_a_cross_encoder_built_with_onnx_scores_as_6_2(tmp_path):
    folder = tiny_cross_encoder_folder(tmp_path, 1)
    model = sbert.CrossEncoder(str(folder), device="cpu", backend="onnx")
    pairs = list(zip(ANCHORS, POSITIVES, strict=True))
    assert model.get_backend() == "onnx"
    np.testing.assert_allclose(model.predict(pairs), st.CrossEncoder(str(folder), device="cpu").predict(pairs),
                               atol=1e-4)  # fmt: skip


def test_an_unknown_backend_is_one_line(tmp_path):
    with pytest.raises(SbertError, match="backend='tensorrt'"):
        sbert.SentenceTransformer(str(tiny_st_folder(tmp_path)), device="cpu", backend="tensorrt")
