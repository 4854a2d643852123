"""BLIP (text, image, image+text) and CLAP (text, audio) through the one multimodal input module: the vectors
sentence-transformers 6.3 gives on the same folders, plain or saved by either library, and the reference's
input shapes ({"text", "image"}, arrays, {"array", "sampling_rate"})."""

from __future__ import annotations

import numpy as np
import pytest

import sbert
from tests.multimodal_fixtures import st_reference, tiny_blip, tiny_clap

st = pytest.importorskip("sentence_transformers")
Image = pytest.importorskip("PIL.Image")

TEXTS = ["a red car", "two dogs play in the park"]


def reference(folder):
    return st_reference(folder)


def photos() -> list:
    rng = np.random.default_rng(1)
    return [Image.fromarray((rng.random((30 + 6 * i, 40, 3)) * 255).astype("uint8")) for i in range(3)]


def sounds() -> list[np.ndarray]:
    rng = np.random.default_rng(2)
    # Within the extractor's 1 s: a longer sound is cropped at random (its truncation), in both libraries.
    return [rng.standard_normal(n).astype(np.float32) for n in (8000, 5000, 7000)]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("kinds")
    blip, clap = tiny_blip(base), tiny_clap(base)
    reference(blip).save(str(base / "blip-st"))
    reference(clap).save(str(base / "clap-st"))
    return {"blip": blip, "clap": clap, "blip-st": base / "blip-st", "clap-st": base / "clap-st"}


def inputs(family: str) -> dict[str, list]:
    if family.startswith("blip"):
        pairs = [{"text": t, "image": p} for t, p in zip(TEXTS, photos(), strict=False)]
        return {"text": TEXTS, "image": photos(), "image+text": pairs}
    audio = sounds()
    return {"text": TEXTS, "audio": audio, "audio dicts": [{"array": a, "sampling_rate": 8000} for a in audio]}


@pytest.mark.parametrize("family", ["blip", "clap", "blip-st", "clap-st"])
def test_every_kind_gives_sentence_transformers_vectors(folders, family):
    want, ours, dropin = reference(folders[family]), sbert.load(str(folders[family])), sbert.SentenceTransformer(
        str(folders[family]), device="cpu")  # fmt: skip
    assert set(ours.modalities) == ({"text", "image", "image+text"} if family.startswith("blip") else {"text", "audio"})
    for kind, batch in inputs(family).items():
        expected = want.encode(batch)
        np.testing.assert_allclose(ours.encode(batch), expected, atol=1e-5, err_msg=f"{family} {kind}")
        np.testing.assert_allclose(dropin.encode(batch), expected, atol=1e-5, err_msg=f"{family} {kind} drop-in")
        np.testing.assert_allclose(ours.encode(batch[0]), expected[0], atol=1e-5, err_msg=f"{family} {kind} one")


@pytest.mark.parametrize("family", ["blip", "clap"])
def test_a_folder_sbert_saves_loads_in_sentence_transformers_with_the_same_vectors(folders, family, tmp_path):
    sbert.load(str(folders[family])).save(str(tmp_path / "saved"))
    want = reference(folders[family])
    again = reference(tmp_path / "saved")
    for kind, batch in inputs(family).items():
        np.testing.assert_allclose(again.encode(batch), want.encode(batch), atol=1e-5, err_msg=f"{family} {kind}")


def test_a_batch_of_two_kinds_or_two_rates_is_refused_as_the_reference_refuses_it(folders):
    blip, clap = sbert.load(str(folders["blip"])), sbert.load(str(folders["clap"]))
    with pytest.raises(ValueError, match="mixes multiple modalities"):
        blip.encode([TEXTS[0], photos()[0]])
    a, b = sounds()[:2]
    with pytest.raises(ValueError, match="sampling rates"):
        clap.encode([{"array": a, "sampling_rate": 8000}, {"array": b, "sampling_rate": 16000}])
