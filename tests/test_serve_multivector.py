"""`sbert serve --model COLBERT`: token vectors at TEI's /embed_all and /v1/embeddings, equal to the library's.

A real server on 127.0.0.1 (uvicorn in a thread), called with raw HTTP and with the OpenAI SDK.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import numpy as np
import pytest

from sbert.multivector import MultiVectorEncoder
from tests.colbert_fixtures import DOCUMENTS, QUERIES, tiny_colbert
from tests.serve_helpers import serve_in_thread

EXPANSION = {"strategy": "fixed", "attend": False, "length": 16}


@pytest.fixture(scope="module")
def colbert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_colbert(tmp_path_factory.mktemp("serve-mv"), query_length=16, document_length=24,
                        query_expansion=EXPANSION)  # fmt: skip


def close(got: list[list[list[float]]], want: list[np.ndarray]) -> None:
    assert [len(m) for m in got] == [len(m) for m in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.array(g, dtype=np.float32), w, atol=1e-5)


def test_token_vectors_are_the_librarys_on_both_routes(colbert: Path) -> None:
    from openai import OpenAI

    model = MultiVectorEncoder.load(colbert, device="cpu")
    server = serve_in_thread("--model", colbert)
    try:
        docs = httpx.post(f"{server.url}/embed_all", json={"inputs": DOCUMENTS}, timeout=60)
        assert docs.status_code == 200, docs.text
        close(docs.json(), model.encode_document(DOCUMENTS))
        queries = httpx.post(f"{server.url}/embed_all", json={"inputs": QUERIES[:2], "input_type": "query"}, timeout=60)
        close(queries.json(), model.encode_query(QUERIES[:2]))
        client = OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        answer = client.embeddings.create(model="colbert", input=QUERIES[:2], extra_body={"input_type": "query"})
        # the SDK asks for base64 and decodes a flat float32 list: the token matrix, row-major
        close([np.reshape(row.embedding, (-1, 8)).tolist() for row in answer.data], model.encode_query(QUERIES[:2]))
        floats = httpx.post(f"{server.url}/v1/embeddings", timeout=60,
                            json={"model": "colbert", "input": DOCUMENTS[:2], "encoding_format": "float"})  # fmt: skip
        close([row["embedding"] for row in floats.json()["data"]], model.encode_document(DOCUMENTS[:2]))
        assert answer.usage.total_tokens == sum(model.token_lengths(QUERIES[:2], "query")[0])  # real tokens only
        health = httpx.get(f"{server.url}/health", timeout=30).json()
        assert health["kind"] == "multi-vector" and health["dimension"] == 8
        info = httpx.get(f"{server.url}/info", timeout=30)  # was a 500: an assert that only knew three kinds
        assert info.status_code == 200, info.text
        assert info.json()["model_type"] == {"embedding": {"pooling": "none"}}
        assert info.json()["max_input_length"] == model.max_seq_length
    finally:
        assert server.stop()


def test_bad_requests_get_one_line_errors(colbert: Path) -> None:
    server = serve_in_thread("--model", colbert)
    try:
        long = {"inputs": ["the cat sat on the mat " * 20], "truncate": False}
        refused = httpx.post(f"{server.url}/embed_all", json=long, timeout=60)
        assert refused.status_code == 413 and "inputs[0]" in refused.json()["error"]
        quantized = httpx.post(f"{server.url}/v1/embeddings", timeout=60,
                               json={"model": "colbert", "input": "a", "encoding_format": "int8"})  # fmt: skip
        assert quantized.status_code == 422 and "float" in quantized.json()["error"]["message"]
        dense = httpx.post(f"{server.url}/embed", json={"inputs": "a"}, timeout=60)
        assert dense.status_code == 424 and "multi-vector" in dense.json()["error"]
    finally:
        assert server.stop()


def test_a_dense_server_answers_424_on_embed_all(tiny_dirs: dict[str, Path]) -> None:
    server = serve_in_thread("--model", tiny_dirs["bert"])
    try:
        answer = httpx.post(f"{server.url}/embed_all", json={"inputs": "a"}, timeout=60)
        assert answer.status_code == 424 and "multi-vector" in answer.json()["error"]
    finally:
        assert server.stop()


def test_a_model_s_truncate_dim_is_what_the_server_serves(colbert: Path, tmp_path: Path) -> None:
    """A folder saved with truncate_dim (sentence-transformers 6.3's setting) serves its cut, unit-length tokens."""
    model = MultiVectorEncoder.load(colbert, device="cpu")
    model.settings.truncate_dim = 4
    model.save(tmp_path / "cut")
    cut = MultiVectorEncoder.load(tmp_path / "cut", device="cpu")
    assert cut.embedding_dimension == 4
    want = cut.encode_document(DOCUMENTS)
    np.testing.assert_allclose(np.linalg.norm(np.concatenate(want), axis=1), 1.0, atol=1e-5)
    server = serve_in_thread("--model", tmp_path / "cut")
    try:
        docs = httpx.post(f"{server.url}/embed_all", json={"inputs": DOCUMENTS}, timeout=60)
        assert docs.status_code == 200, docs.text
        close(docs.json(), want)
        assert httpx.get(f"{server.url}/health", timeout=30).json()["dimension"] == 4
    finally:
        assert server.stop()
