"""Vision-language rerankers (an image-text-to-text model read by LogitScore) against sentence-transformers 6.3.

A folder 6.3 saves scores the same (text, text), (text, image), (image, text) and (text, image+text) pairs
in sbert's native and drop-in CrossEncoder, with and without a prompt; sbert's save loads in 6.3 with the
same scores; rank orders image documents as 6.3's does; the server's /v1/rerank takes page images in Jina's
shape and answers the library's scores.
"""

from __future__ import annotations

import base64
import io

import httpx
import numpy as np
import pytest

from tests.multimodal_fixtures import st_reference, st_vlm_reranker, tiny_llava
from tests.serve_helpers import serve_in_thread

st = pytest.importorskip("sentence_transformers")
Image = pytest.importorskip("PIL.Image")
torch = pytest.importorskip("torch")


def picture(seed: int, size=(40, 30)):
    pixels = np.random.default_rng(seed).integers(0, 256, (*size, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


def data_url(image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("vlm-reranker")
    return st_vlm_reranker(tiny_llava(base), base / "st")


@pytest.fixture(scope="module")
def pairs():
    page, photo = picture(1), picture(2, (24, 48))
    return [("a cat on a mat", "a dog sleeps"), ("a cat", page), (photo, "a cat"),
            ("a cat", {"text": "the caption", "image": photo}), ("tables", page)]  # fmt: skip


def logits(model, pairs, **options):
    return model.predict(pairs, activation_fn=torch.nn.Identity(), **options)


def test_native_and_drop_in_score_6_3_folders_as_6_3(folders, pairs):
    from sbert import CrossEncoder as DropIn
    from sbert.reranker.model import CrossEncoder

    reference = st_reference(folders, "CrossEncoder")
    want = logits(reference, pairs, batch_size=2)
    assert np.ptp(want) > 1e-4  # the pairs score differently: a test that could fail
    native = CrossEncoder.load(folders)
    np.testing.assert_allclose(native.predict(pairs, activation=False, batch_size=2), want, atol=1e-5)
    np.testing.assert_allclose(logits(DropIn(str(folders)), pairs, batch_size=2), want, atol=1e-5)
    prompted = logits(reference, pairs, batch_size=2, prompt="Judge the relevance")
    assert np.abs(prompted - want).max() > 1e-5  # the prompt is a system turn that changes the scores
    np.testing.assert_allclose(native.predict(pairs, activation=False, batch_size=2, prompt="Judge the relevance"),
                               prompted, atol=1e-5)  # fmt: skip


def test_sbert_save_loads_in_6_3_with_the_same_scores(folders, pairs, tmp_path):
    from sbert.reranker.model import CrossEncoder

    native = CrossEncoder.load(folders)
    native.save(tmp_path / "sbert")
    got = native.predict(pairs, activation=False, batch_size=2)
    np.testing.assert_allclose(logits(st_reference(tmp_path / "sbert", "CrossEncoder"), pairs, batch_size=2), got,
                               atol=1e-5)  # fmt: skip


def test_rank_orders_page_images_as_6_3(folders):
    from sbert import CrossEncoder as DropIn

    documents = ["a short text", picture(3), picture(4, (60, 20)), "another text"]
    want = st_reference(folders, "CrossEncoder").rank("a cat", documents, batch_size=2)
    got = DropIn(str(folders)).rank("a cat", documents, batch_size=2)
    assert [r["corpus_id"] for r in got] == [r["corpus_id"] for r in want]
    np.testing.assert_allclose([r["score"] for r in got], [r["score"] for r in want], atol=1e-5)


def test_a_side_it_cannot_read_and_another_backend_are_one_line_errors(folders):
    from sbert.reranker.model import CrossEncoder

    native = CrossEncoder.load(folders)
    with pytest.raises(ValueError, match=r"pairs\[0\] has a 'audio' side"):
        native.predict([("a cat", {"array": np.zeros(100), "sampling_rate": 8000})])
    with pytest.raises(ValueError, match="torch backend"):
        native.predict([("a cat", "a dog")], backend="onnx")


def test_served_rerank_takes_page_images_in_jinas_shape(folders):
    from sbert.reranker.model import CrossEncoder

    page, photo = picture(5), picture(6, (32, 32))
    want = CrossEncoder.load(folders).predict([("a cat", page), ("a cat", "a dog"), ("a cat", photo)], batch_size=8)
    server = serve_in_thread("--reranker", folders)
    try:
        body = {"query": "a cat", "documents": [{"image": data_url(page)}, "a dog", data_url(photo)],
                "return_documents": True}  # fmt: skip
        answer = httpx.post(f"{server.url}/v1/rerank", json=body, timeout=60)
        assert answer.status_code == 200, answer.text
        results = answer.json()["results"]
        np.testing.assert_allclose([r["relevance_score"] for r in sorted(results, key=lambda r: r["index"])], want,
                                   atol=1e-5)  # fmt: skip
        assert results[0]["index"] == int(np.argmax(want))
        assert {"image": data_url(page)} in [r["document"] for r in results]
        corrupt = {"query": "a cat", "documents": [{"image": "data:image/png;base64,AAAA"}]}
        bad = httpx.post(f"{server.url}/v1/rerank", json=corrupt, timeout=60)
        assert bad.status_code == 400 and "documents[0]" in bad.text
    finally:
        assert server.stop()


def test_one_querys_documents_share_its_rendered_prefix_with_6_3s_scores(folders, monkeypatch):
    """A text query's pairs run their common prefix once (reranker/vision_prefix.py), once the model is checked to
    score the same that way; the scores stay 6.3's, documents of texts and page images alike."""
    from sbert.reranker import vision_prefix
    from sbert.reranker.model import CrossEncoder

    documents = ["a short text", picture(7), "another, longer text about cats and mats", picture(8, (30, 50)),
                 {"text": "a caption", "image": picture(9)}, "x"]  # fmt: skip
    pairs = [("which page shows a cat sleeping on a mat?", d) for d in documents]
    native = CrossEncoder.load(folders)
    shared = []
    real = vision_prefix.prefix_group_scores

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        shared.append(out is not None)
        return out

    monkeypatch.setattr(vision_prefix, "prefix_group_scores", spy)
    got = native.predict(pairs, activation=False, batch_size=4)
    assert native.classifier.prefix_checked is True and shared and all(shared)
    want = logits(st_reference(folders, "CrossEncoder"), pairs, batch_size=1)  # whole rows, one at a time
    np.testing.assert_allclose(got, want, atol=1e-5)
    image_query = native.predict([(picture(7), "a"), (picture(7), "b")], activation=False)  # not shared: pixels
    np.testing.assert_allclose(image_query, logits(st_reference(folders, "CrossEncoder"),
                                                   [(picture(7), "a"), (picture(7), "b")]), atol=1e-5)  # fmt: skip


def test_a_single_pair_with_an_image_side_is_one_pair_as_in_6_3(folders):
    from sbert import CrossEncoder as DropIn

    ours, theirs = DropIn(str(folders)), st_reference(folders, "CrossEncoder")
    page = picture(10)
    for inputs in [(page, "a cat"), ("a cat", page), ("a cat", "a dog"), [(page, "a cat")], [("a", "b")]]:
        assert ours.is_singular_input(inputs) == theirs.is_singular_input(inputs), inputs
    got = ours.predict((page, "a cat"), activation_fn=torch.nn.Identity())
    want = theirs.predict((page, "a cat"), activation_fn=torch.nn.Identity())
    assert np.ndim(got) == np.ndim(want) == 0
    np.testing.assert_allclose(got, want, atol=1e-5)
