"""Search your PDFs by their pages: `sbert index build` over a folder of PDFs (written by Pillow here) and a page
image, each page rendered by PDFium and embedded with a ColPali-class model; `sbert search` with a text query
returns each hit's file and page, ranked as sentence-transformers 6.3 ranks the same rendered pages."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from sbert.formats.image_inputs import folder_documents, input_kind, open_image
from sbert.formats.pdf_pages import page_fields
from tests.cli_runner import run_cli
from tests.multimodal_fixtures import tiny_colpali

st = pytest.importorskip("sentence_transformers")
Image = pytest.importorskip("PIL.Image")
pytest.importorskip("pypdfium2")

QUERIES = ["a red car", "quarterly revenue table"]


def page(seed: int):
    rng = np.random.default_rng(seed)
    return Image.fromarray((rng.random((80, 60, 3)) * 255).astype("uint8"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    base = tmp_path_factory.mktemp("pdfs")
    docs = base / "docs"
    (docs / "reports").mkdir(parents=True)
    page(1).save(docs / "a.pdf", save_all=True, append_images=[page(2), page(3)])
    page(4).save(docs / "reports" / "b.pdf", save_all=True, append_images=[page(5)])
    page(6).save(docs / "scan.png")
    (docs / "notes.txt").write_text("not a page")
    return tiny_colpali(base), docs, base


def test_a_folder_lists_every_pdf_page_and_image_in_path_order(corpus):
    _, docs, _ = corpus
    found = folder_documents(docs)
    names = [f"{page_fields(d)['file'].rsplit('/', 1)[1]}:{page_fields(d)['page']}" if "#page=" in d
             else d.rsplit("/", 1)[1] for d in found]  # fmt: skip
    assert names == ["a.pdf:1", "a.pdf:2", "a.pdf:3", "b.pdf:1", "b.pdf:2", "scan.png"]
    assert all(input_kind(d) == "image" for d in found)
    first = open_image(found[0])
    assert first.mode == "RGB" and max(first.size) == 1024


def test_index_build_then_search_returns_file_and_page_ranked_as_the_reference(corpus):
    colpali, docs, base = corpus
    built = run_cli("index", "build", str(docs), "--model", str(colpali), "--out", str(base / "index"))
    assert built.returncode == 0, built.stderr
    found = run_cli("search", str(base / "index"), *QUERIES, "--top-k", "6", "--json")
    assert found.returncode == 0, found.stderr
    answers = [json.loads(line) for line in found.stdout.splitlines()]
    for method in ("exact", "muvera"):  # every search method's structures are built for page matrices too
        other = run_cli("search", str(base / "index"), *QUERIES, "--top-k", "6", "--json", "--method", method)
        assert other.returncode == 0, other.stderr
        assert [[h["text"] for h in json.loads(line)["hits"]] for line in other.stdout.splitlines()] == [
            [h["text"] for h in a["hits"]] for a in answers], method  # fmt: skip
    documents = folder_documents(docs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = st.MultiVectorEncoder(str(colpali), device="cpu")
    pages = reference.encode_document([open_image(d) for d in documents])  # the same rendered pages
    scores = reference.similarity(reference.encode_query(QUERIES), pages).numpy()
    for answer, row in zip(answers, scores, strict=True):
        assert [h["text"] for h in answer["hits"]] == [documents[i] for i in np.argsort(-row, kind="stable")]
        # the index keeps its tokens as float16 (its default token format): scores agree to its rounding
        np.testing.assert_allclose([h["score"] for h in answer["hits"]], np.sort(row)[::-1], rtol=2e-4)
        pdf_hits = [h for h in answer["hits"] if h["text"].endswith(tuple(f"#page={n}" for n in (1, 2, 3)))]
        assert pdf_hits and all(h["file"].endswith(".pdf") and h["page"] >= 1 for h in pdf_hits)


def test_an_image_text_index_of_pdfs_serves_each_page_hit_as_a_thumbnail(corpus, tmp_path):
    import io

    import httpx

    from tests.multimodal_fixtures import saved_clip
    from tests.serve_helpers import serve_in_thread

    _, docs, _ = corpus
    clip = saved_clip(tmp_path)
    built = run_cli("index", "build", str(docs), "--model", str(clip), "--out", str(tmp_path / "index"))
    assert built.returncode == 0, built.stderr
    server = serve_in_thread("--model", clip, "--index", tmp_path / "index")
    try:
        answer = httpx.post(f"{server.url}/search", json={"query": QUERIES[0], "top_k": 6}, timeout=60)
        assert answer.status_code == 200, answer.text
        hit = next(h for h in answer.json()["results"][0]["hits"] if "#page=" in h["text"])
        picture = httpx.get(f"{server.url}/image/{hit['id']}", timeout=60)
        assert picture.status_code == 200 and picture.headers["content-type"] == "image/png"
        assert max(Image.open(io.BytesIO(picture.content)).size) == 512
    finally:
        assert server.stop()


def test_a_page_index_is_served_with_search_and_page_thumbnails(corpus):
    """`sbert serve --model COLPALI --index DIR`: /search answers the CLI's hits (file and page included) and
    /image/{id} renders each page hit; a text query is a text, never a path on the server's disk."""
    import io

    import httpx

    from tests.serve_helpers import serve_in_thread

    colpali, docs, base = corpus
    index = base / "served-index"
    built = run_cli("index", "build", str(docs), "--model", str(colpali), "--out", str(index))
    assert built.returncode == 0, built.stderr
    cli = run_cli("search", str(index), QUERIES[0], "--top-k", "4", "--json")
    want = json.loads(cli.stdout.splitlines()[0])["hits"]
    server = serve_in_thread("--model", colpali, "--index", index)
    try:
        answer = httpx.post(f"{server.url}/search", json={"query": QUERIES[0], "top_k": 4}, timeout=60)
        assert answer.status_code == 200, answer.text
        hits = answer.json()["results"][0]["hits"]
        assert [(h["id"], h["text"], h.get("file"), h.get("page")) for h in hits] == [
            (h["id"], h["text"], h.get("file"), h.get("page")) for h in want]  # fmt: skip
        np.testing.assert_allclose([h["score"] for h in hits], [h["score"] for h in want], rtol=1e-5)
        assert httpx.get(f"{server.url}/health", timeout=60).json()["index_size"] == len(folder_documents(docs))
        page_hit = next(h for h in hits if "page" in h)
        picture = httpx.get(f"{server.url}/image/{page_hit['id']}", timeout=60)
        assert picture.status_code == 200 and picture.headers["content-type"] == "image/png"
        assert max(Image.open(io.BytesIO(picture.content)).size) == 512
        path_query = httpx.post(f"{server.url}/search", json={"query": str(docs / "scan.png")}, timeout=60)
        assert path_query.status_code == 200  # searched as the text it is
        sparse = httpx.post(f"{server.url}/search", json={"query": "x", "mode": "sparse"}, timeout=60)
        assert sparse.status_code == 422 and "MaxSim" in sparse.text
    finally:
        assert server.stop()


def test_a_text_index_of_a_page_model_serves_no_files(corpus, tmp_path):
    from tests.serve_helpers import serve_in_thread

    colpali, docs, _ = corpus
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{docs / 'scan.png'} is a file name written as text\nanother line\n")
    built = run_cli("index", "build", str(lines), "--model", str(colpali), "--out", str(tmp_path / "index"))
    assert built.returncode == 0, built.stderr
    import httpx

    server = serve_in_thread("--model", colpali, "--index", tmp_path / "index")
    try:
        assert httpx.get(f"{server.url}/image/0", timeout=60).status_code == 404
    finally:
        assert server.stop()


@pytest.mark.e2e  # a real browser (CI's e2e step)
def test_the_page_shows_pdf_page_hits_as_thumbnails(corpus, tmp_path):
    from tests.browser import headless_chromium, searched_thumbnails
    from tests.serve_helpers import serve_in_thread

    browser = headless_chromium(tmp_path / "chrome")
    colpali, docs, _ = corpus
    built = run_cli("index", "build", str(docs), "--model", str(colpali), "--out", str(tmp_path / "index"))
    assert built.returncode == 0, built.stderr
    server = serve_in_thread("--model", colpali, "--index", tmp_path / "index")
    try:
        thumbs, hits = searched_thumbnails(browser, server.url, QUERIES[1])
        assert len(thumbs) == 5 and len(hits) == 5  # the page's top 5: pages of both PDFs and the scan, each drawn
        assert any("#page=" in hit for hit in hits)
    finally:
        browser.quit()
        assert server.stop()
