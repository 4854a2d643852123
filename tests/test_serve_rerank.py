"""`/v1/rerank` and quantized `encoding_format`s on a real `sbert serve --reranker` process on 127.0.0.1."""

from __future__ import annotations

import concurrent.futures

import httpx
import numpy as np
import pytest

from sbert.reranker.model import CrossEncoder
from tests.serve_helpers import raw_request, serve_in_thread
from tests.tiny_models import save_tiny_reranker

KEY = "rerank-key"
MODEL = "all-MiniLM-L6-v2"
AUTH = {"Authorization": f"Bearer {KEY}"}
DOCS = ["A man plays a guitar on stage.", "The cat sleeps.", "Music is played live.", "It rains in Paris.", "ok"]


@pytest.fixture(scope="module")
def reranker_dir(tiny_dirs, tmp_path_factory):
    path = tmp_path_factory.mktemp("ce") / "tiny-reranker"
    return save_tiny_reranker(tiny_dirs["bert"], path)


@pytest.fixture(scope="module")
def ranges():
    from sbert import SentenceEncoder
    from sbert.search.quantize import calibration_ranges

    return calibration_ranges(SentenceEncoder.load(MODEL, device="cpu").encode([*DOCS, *(d.upper() for d in DOCS)]))


@pytest.fixture(scope="module")
def server(reranker_dir, ranges, tmp_path_factory):
    base = tmp_path_factory.mktemp("rerank")
    np.save(base / "ranges.npy", ranges)
    srv = serve_in_thread("--model", MODEL, "--reranker", str(reranker_dir), "--calibration",
                          str(base / "ranges.npy"), "--api-key", KEY, "--max-inputs", "32",
                          "--max-body-bytes", "100000")  # fmt: skip
    yield srv
    assert srv.stop()


def rerank(server, body, headers=AUTH, **kw):
    return httpx.post(server.url + "/v1/rerank", json=body, headers=headers, timeout=60, **kw)


def test_rerank_equals_offline_rank(server, reranker_dir):
    offline = CrossEncoder.load(reranker_dir).rank("who plays music?", DOCS, top_k=3, return_documents=True)
    answer = rerank(server, {"query": "who plays music?", "documents": DOCS, "top_n": 3, "return_documents": True,
                             "model": "tiny-reranker"})  # fmt: skip
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    np.testing.assert_allclose([r["relevance_score"] for r in results], [o["score"] for o in offline], atol=1e-5)
    every = CrossEncoder.load(reranker_dir).predict([("who plays music?", d) for d in DOCS])
    np.testing.assert_allclose([r["relevance_score"] for r in results], [every[r["index"]] for r in results], atol=1e-5)
    assert [r["document"]["text"] for r in results] == [DOCS[r["index"]] for r in results]
    ids = CrossEncoder.load(reranker_dir).classifier.pair_ids([("who plays music?", d) for d in DOCS])
    assert answer.json()["usage"]["total_tokens"] == sum(map(len, ids))
    plain = rerank(server, {"query": "who plays music?", "documents": DOCS}).json()["results"]
    assert len(plain) == len(DOCS) and "document" not in plain[0]
    assert httpx.get(server.url + "/health").json()["reranker"] == "tiny-reranker"


def test_concurrent_requests_are_batched_and_each_gets_its_own_answer(server, reranker_dir):
    offline = CrossEncoder.load(reranker_dir)
    queries = [f"question number {i} about music" for i in range(24)]

    def ask(q):
        return q, rerank(server, {"query": q, "documents": DOCS}).json()["results"]

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(ask, queries))
    for q, results in answers:
        expected = offline.predict([(q, d) for d in DOCS])
        got = np.empty(len(DOCS))
        got[[r["index"] for r in results]] = [r["relevance_score"] for r in results]
        np.testing.assert_allclose(got, expected, atol=1e-5)
    metrics = httpx.get(server.url + "/metrics", headers=AUTH).text
    assert 'sbert_requests_total{route="/v1/rerank",status="200"}' in metrics


@pytest.mark.parametrize(
    ("body", "code", "says"),
    [
        ({"query": "q", "documents": []}, "invalid_request", "documents"),
        ({"query": "q", "documents": DOCS, "top_n": 0}, "invalid_request", "top_n"),
        ({"query": "q", "documents": DOCS, "top_n": 6}, "invalid_top_n", "top_n=6 exceeds the 5 documents"),
        ({"documents": DOCS}, "invalid_request", "query"),
        ({"query": "q", "documents": ["fine", None]}, "invalid_request", "documents[1]"),
        ({"query": "q", "documents": ["fine", ""]}, "empty_input", "documents[1] is an empty string"),
        ({"query": "", "documents": ["fine"]}, "empty_input", "query[0] is an empty string"),
        ({"query": "q", "documents": DOCS, "top_n": "2"}, "invalid_request", "top_n"),
    ],
)
def test_bad_requests_are_422_with_a_code(server, body, code, says):
    answer = rerank(server, body)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == code and says in error["message"], error


def test_hardening_as_for_embeddings(server):
    surrogate = b'{"query": "q", "documents": ["fine", "b\\udfff c"]}'
    status, body = raw_request(server.url, surrogate, AUTH, path="/v1/rerank")
    assert status == 422 and body["error"]["code"] == "invalid_unicode" and "documents[1]" in body["error"]["message"]
    status, body = raw_request(server.url, b'{"query": "q", "documents": [', AUTH, path="/v1/rerank")
    assert status == 400 and body["error"]["code"] == "invalid_json"
    status, body = raw_request(server.url, b'{"query": "' + b"x" * 200_000 + b'"}', AUTH, path="/v1/rerank")
    assert status == 413 and body["error"]["code"] == "body_too_large"
    many = rerank(server, {"query": "q", "documents": ["d"] * 40})
    assert many.status_code == 413 and many.json()["error"]["code"] == "too_many_inputs"
    assert rerank(server, {"query": "q", "documents": DOCS}, headers={}).status_code == 401
    wrong = rerank(server, {"query": "q", "documents": DOCS, "model": "other"})
    assert wrong.status_code == 404 and wrong.json()["error"]["code"] == "model_not_found"
    port = server.url.rsplit(":", 1)[1]
    evil = rerank(server, {"query": "q", "documents": DOCS}, headers={**AUTH, "Host": f"evil.example:{port}"})
    assert evil.status_code == 400 and evil.json()["error"]["code"] == "host_not_allowed"
    assert rerank(server, {"query": "still", "documents": DOCS}).status_code == 200


def test_quantized_encoding_formats_equal_offline_quantization(server, ranges):
    from sbert import SentenceEncoder
    from sbert.search.quantize import quantize_embeddings

    offline = SentenceEncoder.load(MODEL, device="cpu").encode(DOCS)

    def embed(fmt, **extra):
        answer = httpx.post(server.url + "/v1/embeddings", headers=AUTH, timeout=60,
                            json={"model": MODEL, "input": DOCS, "encoding_format": fmt, **extra})  # fmt: skip
        assert answer.status_code == 200 or extra, answer.text
        return answer

    for fmt in ("int8", "uint8"):
        got = np.array([d["embedding"] for d in embed(fmt).json()["data"]])
        # Batched on the server, alone here: a value on a step's edge may round one step apart.
        assert np.abs(got - quantize_embeddings(offline, fmt, ranges=ranges).astype(int)).max() <= 1
    for fmt in ("binary", "ubinary"):
        got = np.array([d["embedding"] for d in embed(fmt).json()["data"]])
        assert got.shape == (len(DOCS), 48)
        assert (got == quantize_embeddings(offline, fmt)).mean() > 0.98
    short = embed("int8", dimensions=64)
    assert short.status_code == 422 and short.json()["error"]["code"] == "invalid_dimensions"
    assert embed("binary", dimensions=64).json()["data"][0]["embedding"].__len__() == 8
    assert embed("int4", dimensions=None).status_code == 422


def test_a_bad_calibration_file_stops_the_start(tmp_path, capsys):
    from sbert.cli.main import main

    np.save(tmp_path / "bad.npy", np.zeros((2, 7), dtype=np.float32))
    assert main(["serve", "--model", MODEL, "--device", "cpu", "--calibration", str(tmp_path / "bad.npy")]) == 2
    assert "expected finite (2, 384) min/max ranges" in capsys.readouterr().err


def test_a_text_reranker_takes_jinas_text_objects_and_refuses_images(server):
    plain = rerank(server, {"query": "who plays music?", "documents": DOCS}).json()["results"]
    objects = rerank(server, {"query": {"text": "who plays music?"}, "documents": [{"text": d} for d in DOCS]})
    assert objects.status_code == 200, objects.text
    assert objects.json()["results"] == plain
    image = rerank(server, {"query": "who plays music?", "documents": [{"image": "data:image/png;base64,AAAA"}]})
    assert image.status_code == 422 and "reads text only" in image.text
