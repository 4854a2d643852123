"""Sounds and image+text pairs on a real loopback server: Infinity's `"modality": "audio"`, Jina's dicts and bare
data URLs give sentence-transformers 6.3's vectors of the same inputs; a sound's length is limited from its
header (a few KB of FLAC silence is minutes long), a corrupt one is a 400, a kind the model lacks a 422."""

from __future__ import annotations

import base64
import io

import httpx
import numpy as np
import pytest

from tests.multimodal_fixtures import st_reference, tiny_blip, tiny_clap
from tests.serve_helpers import serve_in_thread

st = pytest.importorskip("sentence_transformers")
soundfile = pytest.importorskip("soundfile")
Image = pytest.importorskip("PIL.Image")


def reference(folder):
    return st_reference(folder)


def sound_url(samples: np.ndarray, rate: int = 8000, fmt: str = "WAV", subtype: str = "FLOAT") -> str:
    buffer = io.BytesIO()
    soundfile.write(buffer, samples, rate, format=fmt, subtype=subtype)
    return f"data:audio/{fmt.lower()};base64," + base64.b64encode(buffer.getvalue()).decode()


def image_url(image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def served(server, body: dict) -> np.ndarray:
    """The rows the server answers `body` with (its model named as /v1/models names it)."""
    model = httpx.get(f"{server.url}/v1/models", timeout=60).json()["data"][0]["id"]
    return rows(httpx.post(f"{server.url}/v1/embeddings", json={**body, "model": model}, timeout=60))


def rows(answer: httpx.Response) -> np.ndarray:
    assert answer.status_code == 200, answer.text
    return np.asarray([d["embedding"] for d in answer.json()["data"]], dtype=np.float32)


@pytest.fixture(scope="module")
def clap(tmp_path_factory):
    folder = tiny_clap(tmp_path_factory.mktemp("serve-clap"))
    server = serve_in_thread("--model", folder, "--max-audio-seconds", "2")
    yield folder, server
    assert server.stop()


def test_sounds_in_every_request_shape_give_the_references_vectors(clap):
    folder, server = clap
    rng = np.random.default_rng(4)
    sounds = [rng.uniform(-0.5, 0.5, n).astype(np.float32) for n in (8000, 6000)]
    want = reference(folder).encode([{"array": s, "sampling_rate": 8000} for s in sounds])
    text = reference(folder).encode(["a dog barks"])[0]
    urls = [sound_url(s) for s in sounds]
    np.testing.assert_allclose(served(server, {"input": urls, "modality": "audio"}), want, atol=1e-5)  # Infinity
    np.testing.assert_allclose(served(server, {"input": urls}), want, atol=1e-5)  # bare data URLs
    jina = {"input": [{"audio": urls[0]}, {"text": "a dog barks"}, {"audio": urls[1]}]}
    np.testing.assert_allclose(served(server, jina), np.stack([want[0], text, want[1]]), atol=1e-5)
    stereo = np.stack([sounds[0], sounds[0]], axis=1)  # two equal channels average to the same sound
    np.testing.assert_allclose(served(server, {"input": [sound_url(stereo)]}), want[:1], atol=1e-5)


def test_a_flac_sound_is_the_one_libsndfile_decodes(clap):
    folder, server = clap
    samples = np.random.default_rng(5).uniform(-0.5, 0.5, 7000).astype(np.float32)
    url = sound_url(samples, fmt="FLAC", subtype="PCM_16")
    decoded, rate = soundfile.read(io.BytesIO(base64.b64decode(url.split(",", 1)[1])), dtype="float32")
    want = reference(folder).encode([{"array": decoded, "sampling_rate": rate}])
    got = served(server, {"input": [url]})
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_sound_limits_and_corrupt_sounds_answer_4xx(clap):
    _, server = clap
    silence = sound_url(np.zeros(8000 * 200, np.float32), fmt="FLAC", subtype="PCM_16")  # 200 s in a few KB
    assert len(silence) < 100_000
    cases = {
        "long": ([silence], 413, "200.0 s of audio; the limit is 2 s"),
        "corrupt": (["data:audio/wav;base64," + base64.b64encode(b"RIFF not a wav").decode()], 400, "not a readable"),
        "text model kind": ([{"image": image_url(Image.new("RGB", (8, 8)))}], 422, "embeds text, audio"),
    }
    model = httpx.get(f"{server.url}/v1/models", timeout=60).json()["data"][0]["id"]
    for name, (values, status, words) in cases.items():
        answer = httpx.post(f"{server.url}/v1/embeddings", json={"model": model, "input": values}, timeout=60)
        assert answer.status_code == status and words in answer.text, (name, answer.text)


def test_image_text_pairs_are_served_as_blip_embeds_them(tmp_path):
    folder = tiny_blip(tmp_path)
    server = serve_in_thread("--model", folder)
    try:
        rng = np.random.default_rng(6)
        picture = Image.fromarray((rng.random((30, 40, 3)) * 255).astype("uint8"))
        blip = reference(folder)
        want = np.concatenate([blip.encode([{"text": "a red car", "image": picture}]), blip.encode(["a red car"])])
        body = {"input": [{"text": "a red car", "image": image_url(picture)}, {"text": "a red car"}]}
        np.testing.assert_allclose(served(server, body), want, atol=1e-5)
    finally:
        assert server.stop()
