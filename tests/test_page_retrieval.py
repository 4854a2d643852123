"""ColPali-class models (`*ForRetrieval`) as multi-vector encoders: query token matrices, page-image token
matrices and MaxSim scores as sentence-transformers 6.3 gives them, from a plain folder or one saved by either
library, through sbert's own class and the drop-in MultiVectorEncoder."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import sbert
from tests.multimodal_fixtures import st_reference, tiny_colpali

st = pytest.importorskip("sentence_transformers")
Image = pytest.importorskip("PIL.Image")

QUERIES = ["a red car", "two dogs play in the park", "the weather is cold today"]


def reference(folder):
    return st_reference(folder, "MultiVectorEncoder")


def pages() -> list:
    rng = np.random.default_rng(7)
    return [Image.fromarray((rng.random((40 + 8 * i, 30, 3)) * 255).astype("uint8")) for i in range(3)]


def as_arrays(rows) -> list[np.ndarray]:
    return [np.asarray(r.detach().cpu().numpy() if hasattr(r, "detach") else r, dtype=np.float32) for r in rows]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("colpali")
    plain = tiny_colpali(base)
    reference(plain).save(str(base / "st"))
    return {"plain": plain, "st": base / "st"}


@pytest.mark.parametrize("layout", ["plain", "st"])
def test_queries_pages_and_scores_are_the_references(folders, layout):
    want = reference(folders[layout])
    q_want, d_want = as_arrays(want.encode_query(QUERIES)), as_arrays(want.encode_document(pages()))
    for ours in (sbert.load(str(folders[layout])), sbert.MultiVectorEncoder(str(folders[layout]), device="cpu")):
        q, d = as_arrays(ours.encode_query(QUERIES)), as_arrays(ours.encode_document(pages()))
        for got, expected in zip([*q, *d], [*q_want, *d_want], strict=True):
            np.testing.assert_allclose(got, expected, atol=1e-5)
        np.testing.assert_allclose(np.asarray(ours.similarity(q, d)), want.similarity(q_want, d_want).numpy(),
                                   atol=1e-4)  # fmt: skip


def test_truncate_dim_keeps_leading_dimensions_as_the_reference_does(folders):
    want = st_reference(folders["plain"], "MultiVectorEncoder", truncate_dim=8)
    got = sbert.load(str(folders["plain"])).encode_document(pages(), truncate_dim=8)
    for ours, theirs in zip(as_arrays(got), as_arrays(want.encode_document(pages())), strict=True):
        assert ours.shape[1] == 8
        np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_a_folder_sbert_saves_loads_in_sentence_transformers(folders, tmp_path):
    sbert.load(str(folders["st"])).save(str(tmp_path / "again"))
    want, again = reference(folders["st"]), reference(tmp_path / "again")
    for got, expected in zip(as_arrays(again.encode_document(pages())), as_arrays(want.encode_document(pages())),
                             strict=True):  # fmt: skip
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_training_on_token_ids_refuses_a_page_model_in_one_line(folders):
    from sbert.errors import SbertError

    model = sbert.load(str(folders["plain"]))
    with pytest.raises(SbertError, match="renders its queries and pages with its own processor"):
        model.token_rows(QUERIES)


def test_the_multi_vector_routes_serve_query_and_page_matrices(folders):
    import base64
    import io

    import httpx

    from tests.serve_helpers import serve_in_thread

    server = serve_in_thread("--model", folders["st"])
    try:
        want = reference(folders["st"])
        buffer = io.BytesIO()
        pages()[0].save(buffer, format="PNG")
        url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
        query = httpx.post(f"{server.url}/embed_all", json={"inputs": QUERIES[:2], "input_type": "query"}, timeout=60)
        assert query.status_code == 200, query.text
        for got, expected in zip(query.json(), as_arrays(want.encode_query(QUERIES[:2])), strict=True):
            np.testing.assert_allclose(np.asarray(got, np.float32), expected, atol=1e-5)
        page = httpx.post(f"{server.url}/embed_all", json={"inputs": [url]}, timeout=60)
        assert page.status_code == 200, page.text
        np.testing.assert_allclose(np.asarray(page.json()[0], np.float32),
                                   as_arrays(want.encode_document([pages()[0]]))[0], atol=1e-5)  # fmt: skip
        on_disk = folders["st"].parent / "page.png"  # a client's text naming a file here is a text, never opened
        pages()[1].save(on_disk)
        named = httpx.post(f"{server.url}/embed_all", json={"inputs": [str(on_disk)]}, timeout=60)
        assert named.status_code == 200, named.text
        as_text = sbert.load(str(folders["st"])).encode_known([str(on_disk)], "text")[0]
        as_page = as_arrays(want.encode_document([pages()[1]]))[0]
        served = np.asarray(named.json()[0], np.float32)
        assert served.shape != as_page.shape or np.abs(served - as_page).max() > 1e-3  # the file was not read
        np.testing.assert_allclose(served, as_text, atol=1e-5)
        model = httpx.get(f"{server.url}/v1/models", timeout=60).json()["data"][0]["id"]
        openai = httpx.post(f"{server.url}/v1/embeddings", json={"model": model, "input": [url, QUERIES[0]]},
                            timeout=60)  # fmt: skip
        assert openai.status_code == 200, openai.text
        assert [len(d["embedding"]) for d in openai.json()["data"]] == [len(page.json()[0]), len(query.json()[0])]
    finally:
        assert server.stop()


def test_bf16_runs_the_page_tower_in_a_cast_copy(folders, emulated_cpu_bf16):
    """`precision="bf16"` casts a copy of the page model once (the CPU's bf16 path); "auto" keeps the reference's."""
    model = sbert.load(str(folders["plain"]))
    fp32 = as_arrays(model.encode_document(pages()))
    half = as_arrays(model.encode_document(pages(), precision="bf16"))
    assert next(model.transformer.parameters()).dtype == torch.float32  # the held weights are untouched
    assert model.page_module("bf16") is model.page_module("bf16")  # cast once, then reused
    for a, b in zip(half, fp32, strict=True):
        assert a.shape == b.shape and np.abs(a - b).max() > 0  # it really ran in bf16
        assert ((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).min() > 0.99
