"""`sbert serve --model X` for every kind of X, and int8 embeddings with no calibration step.

Real servers on 127.0.0.1, called with the clients' own SDKs (huggingface_hub's InferenceClient, cohere's
ClientV2) and raw HTTP.
"""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from sbert import CrossEncoder, SentenceEncoder
from sbert.search.quantize import dequantize, quantize_embeddings
from sbert.sparse import SparseEncoder
from tests.serve_helpers import serve_in_thread
from tests.test_sparse import build_mlm, st_splade
from tests.tiny_models import CORPUS, save_tiny_reranker

TEXTS = ["A man is playing a guitar.", "A woman slices an onion.", "The quarterly report shows growth."]


@pytest.fixture(scope="module")
def folders(tiny_dirs, tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-kinds")
    splade = st_splade(build_mlm(tiny_dirs["bert"], root / "mlm"), root / "splade")
    return splade, save_tiny_reranker(tiny_dirs["bert"], root / "rr")


def test_a_splade_model_alone_is_served_with_its_routes(folders, monkeypatch):
    from huggingface_hub import InferenceClient, constants
    from huggingface_hub.errors import HfHubHTTPError

    splade, _ = folders
    server = serve_in_thread("--model", splade)
    try:
        answer = httpx.post(f"{server.url}/embed_sparse", json={"inputs": CORPUS[:2]}, timeout=60)
        assert answer.status_code == 200, answer.text
        want = SparseEncoder.load(splade, device="cpu").encode(CORPUS[:2])
        for row, got in zip(want, answer.json(), strict=True):
            assert [g["index"] for g in got] == sorted(row.indices.tolist())
            np.testing.assert_allclose([g["value"] for g in got], row.toarray()[0, sorted(row.indices)], rtol=1e-5)
        info = httpx.get(f"{server.url}/info", timeout=30).json()
        assert info["model_type"] == {"embedding": {"pooling": "splade"}} and info["max_input_length"] == 64
        assert httpx.get(f"{server.url}/health", timeout=30).json()["kind"] == "sparse"
        # a dense route: 404, one line saying what the server holds
        monkeypatch.setattr(constants, "is_offline_mode", lambda: False)  # loopback only
        with pytest.raises(HfHubHTTPError) as refused:
            InferenceClient(model=server.url).feature_extraction("a text")
        assert refused.value.response.status_code == 424  # TEI's status for a route its model cannot serve
        message = refused.value.response.json()["error"]
        assert "holds a sparse model" in message and "\n" not in message
    finally:
        assert server.stop()


def test_a_cross_encoder_alone_is_served_with_the_rerank_routes(folders):
    _, reranker = folders
    server = serve_in_thread("--model", reranker)
    try:
        ranked = httpx.post(f"{server.url}/rerank", json={"query": TEXTS[0], "texts": TEXTS}, timeout=60).json()
        scores = CrossEncoder.load(reranker, device="cpu").predict([(TEXTS[0], t) for t in TEXTS])
        assert [r["index"] for r in ranked] == list(np.argsort(-scores, kind="stable"))
        assert max(abs(r["score"] - scores[r["index"]]) for r in ranked) <= 1e-5
        dense = httpx.post(f"{server.url}/v1/embeddings", json={"model": "rr", "input": "x"}, timeout=30)
        assert dense.status_code == 404 and dense.json()["error"]["code"] == "no_dense_model"
        assert "holds a cross-encoder" in dense.json()["error"]["message"]
        info = httpx.get(f"{server.url}/info", timeout=30).json()
        assert "reranker" in info["model_type"]
        long_pair = {"query": TEXTS[0], "texts": ["the cat sat on the mat " * 20, TEXTS[1]]}
        assert httpx.post(f"{server.url}/rerank", json=long_pair, timeout=60).status_code == 200  # cut, as by default
        refused = httpx.post(f"{server.url}/rerank", json={**long_pair, "truncate": False}, timeout=60)
        assert refused.status_code == 413 and "texts[0]" in refused.json()["error"]
    finally:
        assert server.stop()


def test_a_kind_given_twice_is_a_one_line_error(folders):
    from sbert.errors import SbertError

    splade, reranker = folders
    with pytest.raises(SbertError, match="is a sparse model: drop --sparse-model"):
        serve_in_thread("--model", splade, "--sparse-model", splade)
    with pytest.raises(SbertError, match="is a cross-encoder: drop --reranker"):
        serve_in_thread("--model", reranker, "--reranker", reranker)


def test_cohere_int8_needs_no_calibration_and_its_codes_do_not_depend_on_the_batch(tiny_dirs, tmp_path, monkeypatch):
    import cohere

    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "m")
    server = serve_in_thread("--model", tmp_path / "m")
    try:
        calibration = httpx.get(f"{server.url}/info", timeout=30).json()["int8_calibration"]
        assert calibration["source"].startswith("packaged (")
        ranges = np.asarray(calibration["ranges"], dtype=np.float32)
        client = cohere.ClientV2(api_key="unused", base_url=server.url)
        answer = client.embed(texts=TEXTS, model="m", input_type="search_document", embedding_types=["float", "int8"])
        floats = np.asarray(answer.embeddings.float_, dtype=np.float32)
        codes = np.asarray(answer.embeddings.int8, dtype=np.int8)
        unit = floats / np.linalg.norm(floats, axis=1, keepdims=True)
        back = dequantize(codes, ranges)
        cosines = (back * unit).sum(axis=1) / np.linalg.norm(back, axis=1)
        assert cosines.min() >= 0.99, cosines
        assert np.array_equal(codes, quantize_embeddings(unit, "int8", ranges=ranges))
        for i, text in enumerate(TEXTS):  # alone, each text gets the codes it got in the batch (one step at most)
            alone = client.embed(texts=[text], model="m", input_type="search_document", embedding_types=["int8"])
            assert np.abs(np.asarray(alone.embeddings.int8[0], dtype=int) - codes[i].astype(int)).max() <= 1
    finally:
        assert server.stop()


def test_embed_sparse_counts_the_prompt_before_refusing_an_input_over_the_limit(folders, tmp_path):
    import json
    import shutil

    splade, _ = folders
    prompted = shutil.copytree(splade, tmp_path / "prompted")
    config_file = prompted / "config_sentence_transformers.json"
    config = json.loads(config_file.read_text())
    config_file.write_text(json.dumps({**config, "prompts": {"query": "a man is playing a guitar "}}))
    text = "the cat sat on the mat " * 10  # 60 tokens and [CLS], [SEP]: fits the 64 alone, not after the prompt
    server = serve_in_thread("--model", prompted)
    try:
        alone = httpx.post(f"{server.url}/embed_sparse", json={"inputs": text, "truncate": False}, timeout=60)
        assert alone.status_code == 200, alone.text
        body = {"inputs": text, "truncate": False, "prompt_name": "query"}
        refused = httpx.post(f"{server.url}/embed_sparse", json=body, timeout=60)
        assert refused.status_code == 413 and "64 tokens" in refused.json()["error"]
    finally:
        assert server.stop()
