"""TEI's /embed_sparse on a real loopback server: SPLADE vectors from --sparse-model, TEI's errors."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.sparse import SparseEncoder
from tests.serve_helpers import serve_in_thread
from tests.test_sparse import build_mlm, st_splade
from tests.tiny_models import CORPUS


@pytest.fixture(scope="module")
def folders(tiny_dirs, tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-sparse")
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(root / "dense")
    return root / "dense", st_splade(build_mlm(tiny_dirs["bert"], root / "mlm"), root / "splade")


def test_embed_sparse_answers_the_model_vectors_and_tei_errors(folders):
    dense, splade = folders
    server = serve_in_thread("--model", dense, "--sparse-model", splade, "--max-inputs", "8")
    try:
        answer = httpx.post(f"{server.url}/embed_sparse", json={"inputs": CORPUS[:3]}, timeout=60)
        assert answer.status_code == 200, answer.text
        want = SparseEncoder.load(splade, device="cpu").encode(CORPUS[:3])
        for row, got in zip(want, answer.json(), strict=True):
            assert [g["index"] for g in got] == sorted(row.indices.tolist())  # every active dimension, by index
            np.testing.assert_allclose([g["value"] for g in got], row.toarray()[0, sorted(row.indices)], rtol=1e-5)
        one = httpx.post(f"{server.url}/embed_sparse", json={"inputs": CORPUS[0]}, timeout=60).json()
        assert one == answer.json()[:1]
        cases = [({"inputs": ["ok", ""]}, 422, "Empty", "inputs[1] is an empty string"),
                 ({"inputs": ["word " * 200], "truncate": False}, 413, "Validation", "exceed the model's 64 tokens"),
                 ({"inputs": "a", "prompt_name": "nope"}, 422, "Validation", "prompt_name 'nope'"),
                 ({"inputs": ["a"] * 9}, 413, "Validation", "9 inputs; the limit is 8")]  # fmt: skip
        for body, status, kind, words in cases:
            bad = httpx.post(f"{server.url}/embed_sparse", json=body, timeout=60)
            assert bad.status_code == status and bad.json()["error_type"] == kind and words in bad.json()["error"]
    finally:
        assert server.stop()
    plain = serve_in_thread("--model", dense)
    try:
        refused = httpx.post(f"{plain.url}/embed_sparse", json={"inputs": "a"}, timeout=60)
        assert refused.status_code == 424 and refused.json()["error_type"] == "Backend"
        assert "--sparse-model" in refused.json()["error"]
    finally:
        assert plain.stop()


def test_search_route_runs_sparse_and_hybrid_on_an_index_with_a_sparse_side(folders, tmp_path):
    from tests.cli_runner import run_cli

    dense, splade = folders
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(CORPUS) + "\n")
    idx = tmp_path / "idx"
    assert run_cli("index", "build", str(corpus), "--out", str(idx), "--model", str(dense), "--sparse-model",
                   str(splade)).returncode == 0  # fmt: skip

    def cli_ids(mode: str) -> list[int]:
        result = run_cli("search", str(idx), CORPUS[1], "-k", "3", "--json", "--mode", mode)
        return [h["id"] for h in json.loads(result.stdout)["hits"]]

    server = serve_in_thread("--model", dense, "--index", idx, "--sparse-model", splade)
    try:
        for mode in ("sparse", "hybrid", "dense"):
            answer = httpx.post(f"{server.url}/search", json={"query": CORPUS[1], "top_k": 3, "mode": mode}, timeout=60)
            assert answer.status_code == 200, answer.text
            assert [h["id"] for h in answer.json()["results"][0]["hits"]] == cli_ids(mode)  # the CLI's ranking
        bad = httpx.post(f"{server.url}/search", json={"query": "a", "mode": "hybrid", "alpha": 2}, timeout=60)
        assert bad.status_code == 422
    finally:
        assert server.stop()
    plain = serve_in_thread("--model", dense, "--index", idx)  # no --sparse-model: sparse modes unavailable
    try:
        refused = httpx.post(f"{plain.url}/search", json={"query": "a", "mode": "sparse"}, timeout=60)
        assert refused.status_code == 424 and "built with --sparse-model" in refused.text
    finally:
        assert plain.stop()


def test_concurrent_sparse_requests_share_groups_and_keep_their_rows(folders):
    import concurrent.futures

    dense, splade = folders
    model = SparseEncoder.load(splade, device="cpu")
    chunks = [[CORPUS[(i + j) % len(CORPUS)] for j in range(1 + i % 3)] for i in range(12)]
    server = serve_in_thread("--model", dense, "--sparse-model", splade, "--max-wait-ms", "50")
    try:

        def batches() -> float:
            text = httpx.get(f"{server.url}/metrics", timeout=60).text
            return float(text.split("sbert_batch_texts_count ")[1].split()[0])

        before = batches()

        def ask(texts: list[str]) -> list:
            answer = httpx.post(f"{server.url}/embed_sparse", json={"inputs": texts}, timeout=60)
            assert answer.status_code == 200, answer.text
            return answer.json()

        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            for texts, got in zip(chunks, pool.map(ask, chunks), strict=True):
                want = model.encode(texts)
                for row, vector in zip(got, want, strict=True):
                    assert [g["index"] for g in row] == sorted(vector.indices.tolist())
                    np.testing.assert_allclose([g["value"] for g in row], vector.toarray()[0, sorted(vector.indices)],
                                               rtol=1e-5, atol=1e-6)  # fmt: skip
        assert batches() - before < len(chunks)  # some requests shared a group
    finally:
        assert server.stop()


def test_a_mixed_group_is_encoded_per_prompt_and_put_back_in_order(folders):
    from dataclasses import replace

    from sbert.serve.sparse_batching import encode_keyed

    model = SparseEncoder.load(folders[1], device="cpu")
    model.settings = replace(model.settings, prompts={"q": "query: "})
    items = [((None, "q"), CORPUS[0]), ((None, None), CORPUS[1]), ((None, "q"), CORPUS[2]), ((None, None), CORPUS[3])]
    got = encode_keyed(model, items).toarray()
    prompted, plain = model.encode([CORPUS[0], CORPUS[2]], prompt_name="q"), model.encode([CORPUS[1], CORPUS[3]])
    np.testing.assert_allclose(got, np.vstack([prompted[0].toarray(), plain[0].toarray(), prompted[1].toarray(),
                                               plain[1].toarray()]), rtol=1e-5, atol=1e-6)  # fmt: skip
    assert not np.allclose(got[0], model.encode([CORPUS[0]]).toarray()[0])  # the prompt did change the vector
