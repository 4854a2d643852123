"""Quantized answers on a real `sbert serve` on 127.0.0.1, with a model whose vectors are not unit length."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.cli.main import main
from sbert.search.quantize import dequantize
from tests.serve_helpers import serve_in_thread
from tests.tiny_models import row_cosines


@pytest.fixture(scope="module")
def sentences(data_dir):
    """STSb dev sentences as the indexed corpus, STSb test sentences as requests."""
    from sbert.data.pairs import read_stsb

    dev, test = (read_stsb(data_dir / "stsbenchmark" / f"sts-{s}.csv") for s in ("dev", "test"))
    return sorted({t for pair in dev.texts[:300] for t in pair}), [pair[0] for pair in test.texts[:24]]


@pytest.fixture(scope="module")
def raw_model(tmp_path_factory):
    """all-MiniLM-L6-v2 without its Normalize module: mean-pooled vectors far from unit length."""
    from sbert.modules import Normalize

    full = SentenceEncoder.load(device="cpu")
    folder = tmp_path_factory.mktemp("raw") / "raw-minilm"
    SentenceEncoder([m for m in full.chain() if not isinstance(m, Normalize)], device="cpu").save(folder)
    return folder, SentenceEncoder.load(folder, device="cpu")


def build(folder, kind, out, docs, *extra):
    corpus = out.parent / "corpus.txt"
    corpus.write_text("\n".join(docs) + "\n", encoding="utf-8")
    assert main(["index", "build", str(corpus), "--out", str(out), "--model", str(folder), "--kind", kind, *extra]) == 0


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_int8_codes_describe_the_vectors_their_ranges_came_from(raw_model, sentences, tmp_path):
    folder, model = raw_model
    docs, texts = sentences
    assert np.abs(np.linalg.norm(model.encode(texts), axis=1) - 1).min() > 0.5
    build(folder, "int8", tmp_path / "idx", docs)
    ranges = np.load(tmp_path / "idx" / "ranges.npy")
    server = serve_in_thread("--model", str(folder), "--index", str(tmp_path / "idx"))
    try:
        for fmt in ("int8", "uint8"):
            body = {"model": "raw-minilm", "input": texts, "encoding_format": fmt}
            answer = httpx.post(server.url + "/v1/embeddings", json=body, timeout=60)
            assert answer.status_code == 200, answer.text
            codes = np.array([d["embedding"] for d in answer.json()["data"]], dtype=fmt)
            # Raw vectors against unit-vector ranges put most codes at the ends (60% in the review).
            ends = np.isin(codes, (-128, 127) if fmt == "int8" else (0, 255)).mean()
            assert ends < 0.05, ends
            assert row_cosines(dequantize(codes, ranges), model.encode(texts)).min() >= 0.99
    finally:
        assert server.stop()


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_a_binary_index_without_rescoring_vectors_serves_hamming_ranked_hits(raw_model, sentences, tmp_path):
    folder, _ = raw_model
    docs = sentences[0]
    build(folder, "binary", tmp_path / "bin", docs, "--no-rescore-vectors")
    server = serve_in_thread("--model", str(folder), "--index", str(tmp_path / "bin"))
    try:
        answer = httpx.post(server.url + "/search", json={"query": docs[:2], "top_k": 5}, timeout=60)
        assert answer.status_code == 200, answer.text
        results = answer.json()["results"]
        assert [r["hits"][0]["text"] for r in results] == docs[:2]
        for result in results:
            scores = [h["score"] for h in result["hits"]]
            assert scores == sorted(scores, reverse=True) and scores[0] == 1.0 and len(scores) == 5
    finally:
        assert server.stop()
