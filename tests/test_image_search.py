"""Image search end to end: `sbert index build` over a folder of images with an image-text model, `sbert search`
and the server's /search returning image paths ranked as the library ranks them, and the page's thumbnails."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import numpy as np
import pytest

import sbert
from tests.cli_runner import run_cli
from tests.multimodal_fixtures import saved_clip
from tests.serve_helpers import serve_in_thread
from tests.st_training_fixtures import tiny_st_folder

Image = pytest.importorskip("PIL.Image")
pytest.importorskip("faiss")
QUERIES = ["a red car", "a dog"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A CLIP folder, a folder of images (one in a subfolder, one not an image), and its index."""
    base = tmp_path_factory.mktemp("image-search")
    model = saved_clip(base)
    photos = base / "photos"
    (photos / "more").mkdir(parents=True)
    rng = np.random.default_rng(5)
    for i in range(5):
        where = photos / "more" if i == 4 else photos
        Image.fromarray((rng.random((24 + i, 30, 3)) * 255).astype("uint8")).save(where / f"p{i}.png")
    (photos / "notes.txt").write_text("not an image")
    result = run_cli("index", "build", str(photos), "--model", str(model), "--out", str(base / "index"),
                     "--kind", "flat")  # fmt: skip
    assert result.returncode == 0, result.stderr
    return model, photos, base / "index"


def expected_ranking(model: Path, photos: Path, query: str) -> list[str]:
    native = sbert.load(str(model))
    files = sorted(str(p.resolve()) for p in photos.rglob("*.png"))
    scores = native.similarity(native.encode([query]), native.encode(files))[0]
    return [files[i] for i in np.argsort(-scores, kind="stable")]


def test_the_cli_indexes_a_folder_and_searches_it_with_text(built):
    model, photos, index = built
    result = run_cli("search", str(index), *QUERIES, "--model", str(model), "--top-k", "5", "--json")
    assert result.returncode == 0, result.stderr
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    for query, answer in zip(QUERIES, answers, strict=True):
        hits = [h["text"] for h in answer["hits"]]
        assert hits == expected_ranking(model, photos, query)  # the five images, none of notes.txt
        assert all(Path(h).is_file() for h in hits)


def test_a_text_model_or_an_empty_folder_is_refused_in_one_line(built, tmp_path):
    _, photos, _ = built
    text_model = tiny_st_folder(tmp_path / "text")
    refused = run_cli("index", "build", str(photos), "--model", str(text_model), "--out", str(tmp_path / "i"))
    assert refused.returncode != 0 and "needs an image-text model" in refused.stderr
    (tmp_path / "empty").mkdir()
    empty = run_cli("index", "build", str(tmp_path / "empty"), "--out", str(tmp_path / "j"))
    assert empty.returncode != 0 and "found none" in empty.stderr


def test_the_server_searches_images_and_sends_only_indexed_files(built, tmp_path):
    model, photos, index = built
    server = serve_in_thread("--model", model, "--index", index)
    try:
        answer = httpx.post(f"{server.url}/search", json={"query": QUERIES[0], "top_k": 5}, timeout=60)
        assert answer.status_code == 200, answer.text
        hits = answer.json()["results"][0]["hits"]
        assert [h["text"] for h in hits] == expected_ranking(model, photos, QUERIES[0])
        picture = httpx.get(f"{server.url}/image/{hits[0]['id']}", timeout=60)
        assert picture.status_code == 200 and picture.content == Path(hits[0]["text"]).read_bytes()
        assert httpx.get(f"{server.url}/image/99", timeout=60).status_code == 404
    finally:
        assert server.stop()


@pytest.mark.e2e  # a real browser (CI's e2e step)
def test_the_page_shows_image_hits_as_thumbnails(built, tmp_path):
    from tests.browser import headless_chromium, searched_thumbnails

    browser = headless_chromium(tmp_path / "chrome")
    model, photos, index = built
    server = serve_in_thread("--model", model, "--index", index)
    try:
        thumbs, hits = searched_thumbnails(browser, server.url, QUERIES[0])
        assert len(thumbs) == 5
        assert hits[0].endswith(expected_ranking(model, photos, QUERIES[0])[0])
    finally:
        browser.quit()
        assert server.stop()


def test_a_text_index_line_naming_an_existing_image_file_is_not_served(built, tmp_path):
    _, photos, _ = built
    picture = sorted(photos.rglob("*.png"))[0].resolve()
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(f"{picture}\na note about dogs\n")
    text_model = tiny_st_folder(tmp_path / "text")
    built_text = run_cli("index", "build", str(corpus), "--model", str(text_model), "--out", str(tmp_path / "idx"))
    assert built_text.returncode == 0, built_text.stderr
    server = serve_in_thread("--model", text_model, "--index", tmp_path / "idx")
    try:
        answer = httpx.get(f"{server.url}/image/0", timeout=60)
        assert answer.status_code == 404 and "holds texts" in answer.text
    finally:
        assert server.stop()
