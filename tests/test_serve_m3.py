"""`sbert serve --model BGE-M3`: one model, one set of weights, three outputs on their routes (issue 56, part 2).

The dense vector on /v1/embeddings (and every dense dialect), the lexical weights on TEI's /embed_sparse and
the ColBERT vectors on /embed_all, each equal to `M3Encoder.encode`'s; a real server on 127.0.0.1. The CLI's
dense commands take its dense output too.
"""

from __future__ import annotations

import httpx
import numpy as np
import pytest

import sbert
from sbert.errors import SbertError
from sbert.m3 import lexical_matching_score
from tests.cli_runner import run_cli
from tests.m3_fixtures import build_m3
from tests.serve_helpers import serve_in_thread
from tests.tiny_models import CORPUS

TEXTS = [CORPUS[0], CORPUS[3], " ".join(CORPUS) * 3]  # the last one is cut at the limit


@pytest.fixture(scope="module")
def m3_dir(tmp_path_factory):
    return build_m3(tmp_path_factory.mktemp("serve-m3") / "bge-m3-tiny")


def test_one_server_answers_the_three_outputs_of_one_model(m3_dir):
    want = sbert.load(m3_dir).encode(TEXTS, return_dense=True, return_sparse=True, return_colbert_vecs=True)
    server = serve_in_thread("--model", m3_dir)
    try:
        dense = httpx.post(f"{server.url}/v1/embeddings", json={"input": TEXTS, "model": "bge-m3-tiny"}, timeout=60)
        assert dense.status_code == 200, dense.text
        got = np.array([row["embedding"] for row in dense.json()["data"]], dtype=np.float32)
        np.testing.assert_allclose(got, want["dense_vecs"], atol=1e-6)
        sparse = httpx.post(f"{server.url}/embed_sparse", json={"inputs": TEXTS}, timeout=60)
        assert sparse.status_code == 200, sparse.text
        for row, weights in zip(sparse.json(), want["lexical_weights"], strict=True):
            assert {str(item["index"]): pytest.approx(item["value"], abs=1e-6) for item in row} == weights
        tokens = httpx.post(f"{server.url}/embed_all", json={"inputs": TEXTS}, timeout=60)
        assert tokens.status_code == 200, tokens.text
        for matrix, vectors in zip(tokens.json(), want["colbert_vecs"], strict=True):
            np.testing.assert_allclose(np.array(matrix, dtype=np.float32), vectors, atol=1e-6)  # after [CLS]
        health = httpx.get(f"{server.url}/health", timeout=30).json()
        assert health["kind"] == "m3" and health["dimension"] == want["dense_vecs"].shape[1]
    finally:
        assert server.stop()


def test_bge_m3_brings_its_own_sparse_side(m3_dir, tiny_dirs):
    with pytest.raises(SbertError, match="is a m3 model: drop --sparse-model"):
        serve_in_thread("--model", m3_dir, "--sparse-model", tiny_dirs["bert"])


def test_the_dense_commands_use_bge_m3s_dense_output(m3_dir, tmp_path):
    # A FlagEmbedding folder has no modules.json: loaded as a bare encoder it would be mean-pooled, not CLS.
    text, out = tmp_path / "in.txt", tmp_path / "out.npy"
    text.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    done = run_cli("encode", "--model", str(m3_dir), "--input", str(text), "--output", str(out),
                   "--max-seq-length", "16")  # fmt: skip
    assert done.returncode == 0, done.stderr
    want = sbert.load(m3_dir).encode(TEXTS, max_length=16)["dense_vecs"]
    np.testing.assert_allclose(np.load(out), want, atol=1e-6)
    refused = run_cli("encode", "--model", str(m3_dir), "--input", str(text), "--output", str(out), "--dtype", "int8")
    assert refused.returncode != 0 and "--dtype int8: a BGE-M3 folder is held in fp32" in refused.stderr


def test_bge_m3s_dense_and_lexical_index_is_built_searched_and_served(m3_dir, tmp_path):
    import json

    corpus = ["a man is playing a guitar", "the cat sat on the mat", "it is raining today", "dogs run in the park"]
    (tmp_path / "corpus.txt").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    built = run_cli("index", "build", str(tmp_path / "corpus.txt"), "--out", str(tmp_path / "ix"), "--model",
                    str(m3_dir), "--sparse-model", str(m3_dir))  # fmt: skip
    assert built.returncode == 0, built.stderr
    out = sbert.load(m3_dir).encode(["the cat sat", *corpus], return_sparse=True)
    dense = out["dense_vecs"]
    order = [corpus[i] for i in np.argsort(-(dense[1:] @ dense[0]))]
    lexical = sorted((lexical_matching_score(out["lexical_weights"][0], w) for w in out["lexical_weights"][1:]),
                     reverse=True)  # fmt: skip
    assert lexical[0] > 0  # the test can fail: the query shares weighted tokens with the corpus
    found = run_cli("search", str(tmp_path / "ix"), "the cat sat", "-k", "4", "--json")
    assert found.returncode == 0, found.stderr  # the query embedded by the same dense output (digest checked)
    assert [h["text"] for h in json.loads(found.stdout)["hits"]] == order
    sparse = run_cli("search", str(tmp_path / "ix"), "the cat sat", "-k", "4", "--json", "--mode", "sparse")
    assert sparse.returncode == 0, sparse.stderr  # the lexical weights' side, queried by the same weights
    got = [h["score"] for h in json.loads(sparse.stdout)["hits"]]
    np.testing.assert_allclose(got, lexical[: len(got)], rtol=1e-5)
    hybrid = run_cli("search", str(tmp_path / "ix"), "the cat sat", "-k", "4", "--json", "--mode", "hybrid")
    assert hybrid.returncode == 0 and len(json.loads(hybrid.stdout)["hits"]) == 4, hybrid.stderr
    server = serve_in_thread("--model", m3_dir, "--index", tmp_path / "ix")
    try:
        hits = httpx.post(f"{server.url}/search", json={"query": "the cat sat", "top_k": 4}, timeout=60).json()
        assert [h["text"] for h in hits["results"][0]["hits"]] == order
        body = {"query": "the cat sat", "top_k": 4, "mode": "sparse"}
        served = httpx.post(f"{server.url}/search", json=body, timeout=60).json()["results"][0]["hits"]
        np.testing.assert_allclose([h["score"] for h in served], got, rtol=1e-5)
        colbert = httpx.post(f"{server.url}/search", json={**body, "mode": "colbert"}, timeout=60)
        assert colbert.status_code == 424 and "--colbert-model" in colbert.text  # this index has no ColBERT side
    finally:
        assert server.stop()
