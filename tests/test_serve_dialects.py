"""One service under the three dialects: the same input through OpenAI's, TEI's and Cohere's routes gives
identical vectors, codes and scores (serve/service.py decides; the routes only translate shapes)."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from sbert import SentenceEncoder
from tests.serve_helpers import serve_in_thread
from tests.tiny_models import save_tiny_reranker

TEXTS = ["A man is playing a guitar.", "A woman slices an onion.", "The quarterly report shows growth."]


@pytest.fixture(scope="module")
def server(tiny_dirs, tmp_path_factory):
    base = tmp_path_factory.mktemp("dialects")
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    model.settings.prompts = {"query": "query: ", "document": "passage: "}
    model.save(base / "m")
    srv = serve_in_thread("--model", base / "m", "--reranker", save_tiny_reranker(tiny_dirs["bert"], base / "rr"))
    yield srv
    assert srv.stop()


def post(server, path: str, body: dict) -> object:
    answer = httpx.post(server.url + path, json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_vectors_and_codes_are_the_same_in_every_dialect(server):
    for dims in (None, 16):
        openai = post(
            server, "/v1/embeddings", {"model": "m", "input": TEXTS, "input_type": "query", "dimensions": dims}
        )
        tei = post(server, "/embed", {"inputs": TEXTS, "prompt_name": "query", "dimensions": dims,
                                      "normalize": dims is not None})  # fmt: skip
        cohere = post(server, "/v2/embed", {"texts": TEXTS, "input_type": "search_query", "output_dimension": dims,
                                            "embedding_types": ["float"]})  # fmt: skip
        a = np.array([row["embedding"] for row in openai["data"]])
        assert a.shape == (3, dims or 32)
        assert np.array_equal(a, np.array(tei)) and np.array_equal(a, np.array(cohere["embeddings"]["float"]))
    openai8 = post(server, "/v1/embeddings", {"model": "m", "input": TEXTS, "encoding_format": "int8"})
    cohere8 = post(server, "/v2/embed", {"texts": TEXTS, "embedding_types": ["int8"]})
    assert np.array_equal(np.array([r["embedding"] for r in openai8["data"]]), np.array(cohere8["embeddings"]["int8"]))


def test_rerank_order_and_scores_are_the_same_in_every_dialect(server):
    openai = post(server, "/v1/rerank", {"query": TEXTS[0], "documents": TEXTS, "top_n": 2})["results"]
    tei = post(server, "/rerank", {"query": TEXTS[0], "texts": TEXTS})[:2]
    cohere = post(server, "/v2/rerank", {"query": TEXTS[0], "documents": TEXTS, "top_n": 2})["results"]
    assert [r["index"] for r in openai] == [r["index"] for r in tei] == [r["index"] for r in cohere]
    assert [r["relevance_score"] for r in openai] == [r["score"] for r in tei] == [r["relevance_score"] for r in cohere]


def test_a_missing_reranker_is_one_decision_in_each_dialects_shape(tiny_dirs, tmp_path):
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    plain = serve_in_thread("--model", tmp_path / "m")
    try:
        body = {"query": "q", "documents": ["d"], "texts": ["d"]}
        answers = {path: httpx.post(plain.url + path, json=body, timeout=30) for path in ("/v1/rerank", "/rerank",
                                                                                          "/v2/rerank")}  # fmt: skip
        assert [a.status_code for a in answers.values()] == [404, 424, 404]  # TEI answers 424 for such a route
        messages = [answers["/v1/rerank"].json()["error"]["message"], answers["/rerank"].json()["error"],
                    answers["/v2/rerank"].json()["message"]]  # fmt: skip
        assert len(set(messages)) == 1 and "--reranker" in messages[0]
    finally:
        assert plain.stop()


def test_a_model_that_is_not_served_is_one_404_in_each_dialect(server):
    """`model` naming another model: OpenAI's and Cohere's routes alike refuse it (Cohere's embed once answered)."""
    asks = {"/v1/embeddings": {"model": "other", "input": TEXTS}, "/v1/embed": {"model": "other", "texts": TEXTS},
            "/v2/embed": {"model": "other", "texts": TEXTS, "embedding_types": ["float"]},
            "/v2/rerank": {"model": "other", "query": "q", "documents": TEXTS}}  # fmt: skip
    answers = {path: httpx.post(server.url + path, json=body, timeout=30) for path, body in asks.items()}
    assert {path: a.status_code for path, a in answers.items()} == dict.fromkeys(asks, 404)
    assert "'other' is not served here" in answers["/v1/embed"].json()["message"]
    assert post(server, "/v2/embed", {"model": "m", "texts": TEXTS, "embedding_types": ["float"]})["embeddings"]
