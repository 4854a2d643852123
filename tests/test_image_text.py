"""Two-tower image-text models (CLIP, SigLIP) in sentence-transformers 6.2's layouts: sbert's vectors are 6.2's.

Tiny random CLIP and SigLIP folders are built with transformers and saved by sentence-transformers 6.2 itself
(and in 5.x's `0_CLIPModel` layout); both libraries embed the same texts and images in one process.
"""

from __future__ import annotations

import base64
import io
import json
import shutil
import warnings

import numpy as np
import pytest
import torch

import sbert
from sbert.errors import ModelFormatError
from tests.multimodal_fixtures import legacy_clip, st_clip, st_siglip, st_siglip2, tiny_clip, tiny_siglip, tiny_siglip2

st = pytest.importorskip("sentence_transformers")
Image = pytest.importorskip("PIL.Image")

TEXTS = ["a dog on the grass", "a red car", "x"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("image-text")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clip, siglip, siglip2 = tiny_clip(base), tiny_siglip(base), tiny_siglip2(base)
        return {"hf": (clip, st_clip(clip, base / "st")), "st": (st_clip(clip, base / "st"), None),
                "legacy": (legacy_clip(base / "legacy", clip), base / "st"),
                "siglip": (st_siglip(siglip, base / "siglip-st"), None),
                "siglip2": (st_siglip2(siglip2, base / "siglip2-st"), None)}  # fmt: skip


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """Each image form 6.2 takes, of photos of several sizes (one RGBA): PIL, path, data URI, array, tensor, dict."""
    rng = np.random.default_rng(0)
    photos = [Image.fromarray((rng.random((40 + 9 * i, 50, 3)) * 255).astype("uint8")) for i in range(2)]
    photos.append(Image.fromarray((rng.random((30, 30, 4)) * 255).astype("uint8"), "RGBA"))
    path = tmp_path_factory.mktemp("photos") / "first.png"
    photos[0].save(path)
    data = io.BytesIO()
    photos[1].save(data, format="PNG")
    uri = "data:image/png;base64," + base64.b64encode(data.getvalue()).decode()
    array = np.asarray(photos[1])
    tensor = torch.from_numpy(array.copy())
    return {"pil": photos, "path": [str(path)], "uri": [uri], "array": [array], "tensor": [tensor],
            "dict": [{"image": p} for p in photos]}  # fmt: skip


def loaded(folders, layout):
    ours, reference = folders[layout]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (sbert.SentenceTransformer(str(ours), device="cpu"), sbert.load(str(ours)),
                st.SentenceTransformer(str(reference or ours), device="cpu"))  # fmt: skip


@pytest.mark.parametrize("layout", ["hf", "st", "legacy", "siglip", "siglip2"])
def test_texts_and_images_embed_as_6_2(folders, images, layout):
    dropin, native, reference = loaded(folders, layout)
    want = reference.encode(TEXTS)
    np.testing.assert_allclose(dropin.encode(TEXTS), want, atol=1e-5)
    np.testing.assert_allclose(native.encode(TEXTS), want, atol=1e-5)
    rgba = images["pil"][2]
    if layout == "siglip2":  # SigLIP 2's processor does not convert RGBA: 6.2 raises its ValueError, and so does sbert
        for model in (reference, dropin, native):
            with pytest.raises(ValueError, match="mean must have 4 elements"):
                model.encode([rgba])
        images = {form: [g for g in given if g is not rgba and not (isinstance(g, dict) and g["image"] is rgba)]
                  for form, given in images.items()}  # fmt: skip
    for form, given in images.items():
        want = reference.encode(given)
        np.testing.assert_allclose(dropin.encode(given), want, atol=1e-5, err_msg=form)
        np.testing.assert_allclose(native.encode(given), want, atol=1e-5, err_msg=form)
    single = dropin.encode(images["pil"][0])
    assert single.shape == reference.encode(images["pil"][0]).shape == (want.shape[1],)
    text_image = dropin.similarity(dropin.encode(TEXTS), dropin.encode(images["pil"]))
    expected = reference.similarity(reference.encode(TEXTS), reference.encode(images["pil"]))
    torch.testing.assert_close(text_image, expected, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(dropin.encode_query(images["pil"]), reference.encode_query(images["pil"]), atol=1e-5)


def test_siglip_text_keeps_its_saved_fixed_length_padding(folders):
    dropin, _, reference = loaded(folders, "siglip")
    assert json.loads((folders["siglip"][0] / "sentence_bert_config.json").read_text())["processing_kwargs"]
    # Padded to the longest text instead, the last position the text tower reads would move the vectors.
    features = dropin.input_module.pad(dropin.input_module.token_ids(TEXTS)[0])
    assert features["input_ids"].shape[1] == 16
    np.testing.assert_allclose(dropin.encode(TEXTS), reference.encode(TEXTS), atol=1e-5)


def test_modalities_mixed_batches_and_what_a_text_model_says(folders, images, tmp_path):
    dropin, native, reference = loaded(folders, "st")
    assert dropin.modalities == reference.modalities == ["text", "image"]
    assert dropin.supports("image") and native.modalities == ("text", "image")
    with pytest.raises(ValueError, match=r"mixes multiple modalities \(image, text\)"):
        dropin.encode(["a caption", images["pil"][0]])


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
def test_images_run_on_the_graph_runtimes_with_torch_s_vectors(folders, images, backend, tmp_path):
    pytest.importorskip("onnxruntime")
    if backend == "openvino":
        pytest.importorskip("openvino")
    folder = shutil.copytree(folders["st"][0], tmp_path / "clip")
    model = sbert.load(str(folder))
    photos = images["pil"]  # RGB and RGBA, of several sizes: the processor makes them one size first
    np.testing.assert_allclose(model.encode(photos, backend=backend), model.encode(photos), atol=1e-5)
    assert (folder / "onnx" / "image-embedding.onnx").is_file()  # exported once, beside the model
    np.testing.assert_allclose(model.encode(TEXTS, backend=backend), model.encode(TEXTS), atol=1e-4)
    siglip2 = sbert.load(str(folders["siglip2"][0]))
    with pytest.raises(sbert.errors.BackendError, match="SigLIP 2"):
        siglip2.encode(photos[:2], backend=backend)


def test_a_saved_image_text_model_loads_in_6_2_with_the_same_vectors(folders, images, tmp_path):
    for layout in ("legacy", "siglip", "siglip2"):
        dropin, _, _ = loaded(folders, layout)
        dropin.save(str(tmp_path / layout))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reloaded = st.SentenceTransformer(str(tmp_path / layout), device="cpu")
        photos = images["pil"][:2]  # RGB (SigLIP 2's processor refuses RGBA)
        np.testing.assert_allclose(reloaded.encode(TEXTS), dropin.encode(TEXTS), atol=1e-5)
        np.testing.assert_allclose(reloaded.encode(photos), dropin.encode(photos), atol=1e-5)


def test_other_multimodal_models_are_still_refused_in_one_line(folders, tmp_path):
    folder = tmp_path / "audio"
    shutil.copytree(folders["st"][0], folder)
    config = json.loads((folder / "sentence_bert_config.json").read_text())
    config["modality_config"]["video"] = {"method": "get_video_features", "method_output_name": "pooler_output"}
    (folder / "sentence_bert_config.json").write_text(json.dumps(config))
    with pytest.raises(ModelFormatError, match="is not a model sbert runs yet") as caught:
        sbert.load(str(folder))
    assert "\n" not in str(caught.value)


def test_without_pillow_loading_says_which_extra(folders, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "PIL" else real(name, *a))
    with pytest.raises(ModelFormatError, match=r"needs Pillow: .*\[image\]") as caught:
        sbert.load(str(folders["st"][0]))
    assert "\n" not in str(caught.value)


def test_a_generator_of_texts_is_read_once(folders):
    _, native, reference = loaded(folders, "st")
    np.testing.assert_allclose(native.encode(t for t in TEXTS), reference.encode(TEXTS), atol=1e-5)
