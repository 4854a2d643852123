import numpy as np
import pytest

from sbert.search import cos_sim, paraphrase_mining, semantic_search


@pytest.fixture
def data() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(57, 8)).astype(np.float32)


def brute_cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a @ b.T) / np.outer(np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1))


def test_cos_sim_matches_definition(data):
    np.testing.assert_allclose(cos_sim(data[:5], data), brute_cos(data[:5], data), atol=1e-6)


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_semantic_search_matches_brute_force_for_any_chunking(data, chunk):
    queries = data[:6] + 0.1
    scores, idx = semantic_search(queries, data, top_k=5, chunk_size=chunk)
    full = brute_cos(queries, data)
    expected = np.argsort(-full, axis=1)[:, :5]
    np.testing.assert_array_equal(idx, expected)
    np.testing.assert_allclose(scores, np.take_along_axis(full, expected, axis=1), atol=1e-6)


def test_semantic_search_with_k_above_corpus_size(data):
    _, idx = semantic_search(data[:2], data[:3], top_k=10)
    assert idx.shape == (2, 3) and sorted(idx[0].tolist()) == [0, 1, 2]


@pytest.mark.parametrize("chunk", [3, 2048])
def test_paraphrase_mining_finds_the_true_top_pairs(data, chunk):
    full = brute_cos(data, data)
    iu = np.triu_indices(len(data), k=1)
    order = np.argsort(-full[iu])[:10]
    expected = [(int(iu[0][o]), int(iu[1][o])) for o in order]
    got = paraphrase_mining(data, top_k=10, max_pairs=10, chunk_size=chunk)
    assert [(i, j) for _, i, j in got] == expected
    assert all(i < j for _, i, j in got)


def test_paraphrase_mining_on_one_sentence_is_empty(data):
    assert paraphrase_mining(data[:1]) == []


@pytest.mark.parametrize("chunk", [5, 1000])
def test_torch_mining_equals_numpy_mining(data, chunk):
    expected = paraphrase_mining(data, top_k=4, max_pairs=30, chunk_size=chunk, device=None)
    got = paraphrase_mining(data, top_k=4, max_pairs=30, chunk_size=chunk, device="cpu")
    assert [(i, j) for _, i, j in got] == [(i, j) for _, i, j in expected]
    np.testing.assert_allclose([s for s, _, _ in got], [s for s, _, _ in expected], atol=1e-6)
    assert paraphrase_mining(data[:1], device="cpu") == []
