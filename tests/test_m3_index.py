"""BGE-M3's three outputs in one index folder, and FlagEmbedding's weighted score as a fusion (issue 56, part 2).

`sbert index build --model M3 --sparse-model M3 --colbert-model M3` writes the dense vectors, the lexical
weights and the ColBERT matrices of the same documents; `sbert search --fusion m3` must give each candidate
`pair_scores`' "colbert+sparse+dense" (FlagEmbedding's compute_score, tested against FlagEmbedding itself in
test_m3_flag.py), `--mode colbert` its ColBERT score.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import sbert
from sbert.errors import SbertError
from sbert.m3 import pair_scores
from sbert.search.index import IndexFolderError, SearchIndex, build_index, index_scale
from sbert.search.weighted_fusion import candidate_pools, check_weights, weighted_fuse
from tests.cli_runner import run_cli
from tests.m3_fixtures import build_m3

CORPUS = ["a man is playing a guitar", "the cat sat on the mat", "it is raining today", "dogs run in the park",
          "a woman plays the violin", "the cat is asleep on a sofa"]  # fmt: skip
QUERY = "the cat sat"
WEIGHTS = (0.4, 0.2, 0.4)  # BGE-M3's README


@pytest.fixture(scope="module")
def m3_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("m3-index")
    m3 = build_m3(root / "bge-m3-tiny")
    (root / "corpus.txt").write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    built = run_cli("index", "build", str(root / "corpus.txt"), "--out", str(root / "ix"), "--model", str(m3),
                    "--sparse-model", str(m3), "--colbert-model", str(m3), "--kind", "flat")  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert "ColBERT side: 6 documents" in built.stderr
    return m3, root / "ix"


def _flag_scores(m3, weights) -> dict[str, np.ndarray]:
    out = sbert.load(m3).encode([QUERY, *CORPUS], return_sparse=True, return_colbert_vecs=True)
    per_text = [{k: out[k][i] for k in out} for i in range(len(CORPUS) + 1)]
    scores = [pair_scores(per_text[0], doc, weights) for doc in per_text[1:]]
    return {name: np.array([s[name] for s in scores]) for name in scores[0]}


def _search(ix, *flags: str) -> list[dict]:
    done = run_cli("search", str(ix), QUERY, "-k", str(len(CORPUS)), "--json", *flags)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["hits"]


@pytest.mark.parametrize("weights", [WEIGHTS, (1.0, 1.0, 1.0), (1.0, 0.5, 0.0)])
def test_m3_fusion_is_flagembeddings_weighted_score_of_every_candidate(m3_index, weights):
    m3, ix = m3_index
    want = _flag_scores(m3, weights)["colbert+sparse+dense"]
    hits = _search(ix, "--mode", "hybrid", "--fusion", "m3", "--weights", *map(str, weights))
    assert sorted(h["id"] for h in hits) == list(range(len(CORPUS)))  # every document is a candidate here
    got = np.array([h["score"] for h in sorted(hits, key=lambda h: h["id"])])
    np.testing.assert_allclose(got, want, atol=2e-3)  # the ColBERT side stores float16 tokens
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


def test_colbert_mode_ranks_by_bge_m3s_colbert_score(m3_index):
    m3, ix = m3_index
    want = _flag_scores(m3, WEIGHTS)["colbert"]
    hits = _search(ix, "--mode", "colbert", "--method", "exact")
    np.testing.assert_allclose([h["score"] for h in hits], np.sort(want)[::-1], atol=2e-3)
    assert [h["text"] for h in hits[:1]] == [CORPUS[int(np.argmax(want))]]


def test_a_candidate_one_side_missed_is_scored_by_that_side_too(tmp_path):
    rng = np.random.default_rng(0)
    docs = rng.standard_normal((5, 4)).astype(np.float32)
    query = rng.standard_normal(4).astype(np.float32)
    build_index(docs, [str(i) for i in range(5)], tmp_path / "ix", "flat", "m", "d")
    index = SearchIndex(tmp_path / "ix")
    pools = candidate_pools([np.array([[3, -1]]), np.array([[1, 3]])])  # each side found one or two documents
    assert [p.tolist() for p in pools] == [[1, 3]]
    lexical = {1: 0.25, 3: 2.0}
    sides = [(0.5, lambda q, pool: index.pool_scores(query, pool)),
             (1.5, lambda q, pool: np.array([lexical[int(d)] for d in pool]))]  # fmt: skip
    scores, ids = weighted_fuse(pools, sides, top_k=3)
    dense = index_scale("cosine")(docs) @ index_scale("cosine")(query[None])[0]
    want = {d: (0.5 * dense[d] + 1.5 * lexical[d]) / 2.0 for d in (1, 3)}
    assert ids[0].tolist() == [*sorted(want, key=lambda d: -want[d]), -1]
    np.testing.assert_allclose(scores[0, :2], sorted(want.values(), reverse=True), rtol=1e-6)


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw", "int8"])
def test_every_index_kind_gives_back_its_vectors_for_exact_scores(kind, tmp_path):
    vectors = np.random.default_rng(1).standard_normal((400, 8)).astype(np.float32)
    build_index(vectors, [str(i) for i in range(400)], tmp_path / "ix", kind, "m", "d")
    index = SearchIndex(tmp_path / "ix")
    pool = np.array([7, 0, 399, 123])
    want = index_scale("cosine")(vectors)[pool] @ index_scale("cosine")(vectors[5:6])[0]
    np.testing.assert_allclose(index.pool_scores(vectors[5], pool), want, rtol=1e-5, atol=1e-6)


def test_an_index_without_vectors_says_it_cannot_score_candidates(tmp_path):
    vectors = np.random.default_rng(2).standard_normal((50, 8)).astype(np.float32)
    build_index(vectors, [str(i) for i in range(50)], tmp_path / "ix", "int8", "m", "d", rescore_vectors=False)
    with pytest.raises(IndexFolderError, match="keeps no vectors to score candidates"):
        SearchIndex(tmp_path / "ix").pool_scores(vectors[0], np.array([1, 2]))


def test_bad_weights_and_missing_sides_fail_in_one_line(m3_index, tmp_path):
    m3, ix = m3_index
    for bad in ([1, -1, 1], [0, 0, 0], [1, 1]):
        with pytest.raises(SbertError, match="give 3 finite numbers >= 0"):
            check_weights(bad, 3)
    negative = run_cli("search", str(ix), QUERY, "--mode", "hybrid", "--fusion", "m3", "--weights", "1", "-1", "1")
    assert negative.returncode != 0 and "give 3 finite numbers" in negative.stderr.strip().splitlines()[-1]
    (tmp_path / "corpus.txt").write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    two = run_cli("index", "build", str(tmp_path / "corpus.txt"), "--out", str(tmp_path / "ix2"), "--model",
                  str(m3), "--sparse-model", str(m3), "--kind", "flat")  # fmt: skip
    assert two.returncode == 0, two.stderr
    no_side = run_cli("search", str(tmp_path / "ix2"), QUERY, "--mode", "hybrid", "--fusion", "m3")
    assert no_side.returncode != 0 and "needs a ColBERT side" in no_side.stderr
    sparse_dense = _search(tmp_path / "ix2", "--mode", "hybrid", "--fusion", "m3", "--weights", "1", "1", "0")
    want = _flag_scores(m3, (1.0, 1.0, 0.0))["sparse+dense"]
    np.testing.assert_allclose(sorted(h["score"] for h in sparse_dense), np.sort(want), rtol=1e-5)
    colbert = run_cli("search", str(tmp_path / "ix2"), QUERY, "--mode", "colbert")
    assert colbert.returncode != 0 and "no ColBERT side (build the index with --colbert-model)" in colbert.stderr


def test_a_dense_model_is_refused_as_the_colbert_side_before_encoding(m3_index, tiny_dirs, tmp_path):
    m3, _ = m3_index
    (tmp_path / "corpus.txt").write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    done = run_cli("index", "build", str(tmp_path / "corpus.txt"), "--out", str(tmp_path / "ix"), "--model",
                   str(m3), "--colbert-model", str(tiny_dirs["bert"]))  # fmt: skip
    assert done.returncode != 0 and "not a multi-vector (ColBERT) one or BGE-M3" in done.stderr
    assert not (tmp_path / "ix").exists()  # refused before the dense index was written


def test_one_server_searches_every_side_and_fuses_them_as_the_cli_does(m3_index):
    import httpx

    from tests.serve_helpers import serve_in_thread

    m3, ix = m3_index
    server = serve_in_thread("--model", m3, "--index", ix)
    try:
        for flags, body in (
            (("--mode", "colbert", "--method", "plaid"), {"mode": "colbert"}),
            (("--mode", "hybrid", "--fusion", "m3", "--weights", "0.4", "0.2", "0.4"),
             {"mode": "hybrid", "fusion": "m3", "weights": list(WEIGHTS)}),
        ):  # fmt: skip
            want = _search(ix, *flags)
            answer = httpx.post(f"{server.url}/search", json={"query": QUERY, "top_k": len(CORPUS), **body}, timeout=60)
            assert answer.status_code == 200, answer.text
            got = answer.json()["results"][0]["hits"]
            assert [h["id"] for h in got] == [h["id"] for h in want]
            np.testing.assert_allclose([h["score"] for h in got], [h["score"] for h in want], rtol=1e-5, atol=1e-6)
        bad = httpx.post(f"{server.url}/search", json={"query": QUERY, "fusion": "m3", "weights": [1, -1, 1]},
                         timeout=60)  # fmt: skip
        assert bad.status_code == 422 and "weights" in bad.text
    finally:
        assert server.stop()
