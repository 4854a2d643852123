"""Images in /v1/embeddings and /v2/embed on a real loopback server: the request shapes clients send today give the
library's (and so sentence-transformers 6.2's) image vectors, under the image limits, with no URL fetched."""

from __future__ import annotations

import base64
import io
import warnings

import httpx
import numpy as np
import pytest

import sbert
from tests.multimodal_fixtures import saved_clip
from tests.serve_helpers import serve_in_thread

st = pytest.importorskip("sentence_transformers")
Image = pytest.importorskip("PIL.Image")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("serve-images")
    folder = saved_clip(base)
    server = serve_in_thread("--model", folder, "--max-images", "3", "--max-image-pixels", "10000")
    yield folder, server
    assert server.stop()


def data_url(image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def photos() -> list:
    rng = np.random.default_rng(3)
    return [Image.fromarray((rng.random((30 + 5 * i, 40, 3)) * 255).astype("uint8")) for i in range(2)]


def test_every_request_shape_gives_the_library_vectors(served):
    folder, server = served
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = st.SentenceTransformer(str(folder), device="cpu")
    images, urls = photos(), [data_url(p) for p in photos()]
    want = reference.encode(images)
    text = reference.encode(["a red car"])[0]
    url = f"{server.url}/v1/embeddings"
    shapes = {
        "infinity": {"model": "m", "input": urls, "modality": "image"},
        "bare data urls": {"model": "m", "input": urls},
        "jina": {"model": "m", "input": [{"image": urls[0]}, {"text": "a red car"}, {"image": urls[1]}]},
    }
    for name, body in shapes.items():
        body["model"] = httpx.get(f"{server.url}/v1/models", timeout=60).json()["data"][0]["id"]
        answer = httpx.post(url, json=body, timeout=60)
        assert answer.status_code == 200, (name, answer.text)
        rows = np.asarray([d["embedding"] for d in answer.json()["data"]], dtype=np.float32)
        expected = np.stack([want[0], text, want[1]]) if name == "jina" else want
        np.testing.assert_allclose(rows, expected, atol=1e-5, err_msg=name)
    cohere = httpx.post(f"{server.url}/v2/embed", json={"images": urls, "input_type": "image",
                                                         "embedding_types": ["float"]}, timeout=60)  # fmt: skip
    assert cohere.status_code == 200, cohere.text
    np.testing.assert_allclose(np.asarray(cohere.json()["embeddings"]["float"]), want, atol=1e-5)


def test_the_openai_client_sends_images_through_extra_body(served):
    openai = pytest.importorskip("openai")
    folder, server = served
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="none")
    model = client.models.list().data[0].id
    urls = [data_url(p) for p in photos()]
    answer = client.embeddings.create(model=model, input=urls, extra_body={"modality": "image"})
    native = sbert.load(str(folder))
    np.testing.assert_allclose([d.embedding for d in answer.data], native.encode(photos()), atol=1e-5)


def test_limits_corrupt_images_and_urls_answer_4xx(served):
    _, server = served
    model = httpx.get(f"{server.url}/v1/models", timeout=60).json()["data"][0]["id"]
    big = Image.new("RGB", (200, 200))
    cases = {
        "count": ({"input": [data_url(photos()[0])] * 4}, 413, "4 images or sounds; the limit is 3"),
        "pixels": ({"input": [data_url(big)]}, 413, "200x200 pixels"),
        "corrupt": ({"input": ["data:image/png;base64," + base64.b64encode(b"not a png").decode()]}, 400,
                    "not a readable image"),
        "not base64": ({"input": ["data:image/png;base64,@@@"]}, 400, "not valid base64"),
        "url": ({"input": ["http://127.0.0.1:9/cat.png"], "modality": "image"}, 400, "does not fetch image URLs"),
    }  # fmt: skip
    for name, (body, status, words) in cases.items():
        answer = httpx.post(f"{server.url}/v1/embeddings", json={"model": model, **body}, timeout=60)
        assert answer.status_code == status, (name, answer.text)
        assert words in answer.text, (name, answer.text)


def rotated_jpeg_and_transparent_png() -> list[str]:
    """A JPEG whose EXIF says "rotate 90°" (orientation 6) and a PNG whose lower rows are transparent."""
    rng = np.random.default_rng(5)
    jpeg = Image.fromarray((rng.random((30, 44, 3)) * 255).astype("uint8"))
    exif = Image.Exif()
    exif[0x0112] = 6
    buffer = io.BytesIO()
    jpeg.save(buffer, format="JPEG", exif=exif)
    rgba = (rng.random((36, 36, 4)) * 255).astype("uint8")
    rgba[18:, :, 3] = 0
    return ["data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode(), data_url(Image.fromarray(rgba))]


def test_exif_rotation_and_alpha_are_read_as_the_library_and_sentence_transformers_read_them(served):
    folder, server = served
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = st.SentenceTransformer(str(folder), device="cpu")
    urls = rotated_jpeg_and_transparent_png()
    want = reference.encode(urls)  # sentence-transformers opens the data URLs itself
    np.testing.assert_allclose(sbert.load(str(folder)).encode(urls), want, atol=1e-5)
    model = httpx.get(f"{server.url}/v1/models", timeout=60).json()["data"][0]["id"]
    openai = httpx.post(f"{server.url}/v1/embeddings", json={"model": model, "input": urls}, timeout=60)
    assert openai.status_code == 200, openai.text
    np.testing.assert_allclose([d["embedding"] for d in openai.json()["data"]], want, atol=1e-5)
    cohere = httpx.post(f"{server.url}/v2/embed", json={"images": urls, "input_type": "image",
                                                         "embedding_types": ["float"]}, timeout=60)  # fmt: skip
    assert cohere.status_code == 200, cohere.text
    np.testing.assert_allclose(cohere.json()["embeddings"]["float"], want, atol=1e-5)


def test_a_tiny_long_strip_is_refused_for_the_pixels_the_processor_would_make(served):
    # 1000x1 is under the 10,000-pixel limit as sent; the processor's 32-pixel shortest edge would make it
    # 32 x 32,000 float pixels. A 60x30 image resizes to 64x32 and passes.
    _, server = served
    model = httpx.get(f"{server.url}/v1/models", timeout=60).json()["data"][0]["id"]
    strip = httpx.post(f"{server.url}/v1/embeddings", timeout=60,
                       json={"model": model, "input": [data_url(Image.new("RGB", (1000, 1)))]})  # fmt: skip
    assert strip.status_code == 413 and "in the model's processor" in strip.text, strip.text
    fine = httpx.post(f"{server.url}/v1/embeddings", timeout=60,
                      json={"model": model, "input": [data_url(Image.new("RGB", (60, 30)))]})  # fmt: skip
    assert fine.status_code == 200, fine.text


def test_resized_pixels_follows_each_size_setting():
    from sbert.formats.image_inputs import resized_pixels

    assert resized_pixels({"shortest_edge": 224}, 1000, 1) == 224 * 224_000
    assert resized_pixels({"height": 224, "width": 224}, 1000, 1) == 224 * 224
    assert resized_pixels({"shortest_edge": 800, "longest_edge": 1333}, 4000, 10) == 1333 * 4
    assert resized_pixels({"longest_edge": 100}, 400, 200) == 100 * 50
    assert resized_pixels({"max_pixels": 10_000}, 1000, 1000) == 100 * 100
    assert resized_pixels({}, 30, 20) == 600
