"""SeismicSparseIndex: approximate sparse search against the exact inverted index on the same vectors."""

import numpy as np
import pytest
import scipy.sparse

from sbert.errors import SbertError
from sbert.search.seismic_index import SeismicSettings, SeismicSparseIndex
from sbert.search.sparse_index import SparseIndex


def zipf_vectors(rows: int, active: int, seed: int, vocab: int = 5000) -> scipy.sparse.csr_matrix:
    """SPLADE-like rows: Zipf-drawn terms, exponential weights (repeats merge)."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab + 1) ** 0.8
    cols = np.searchsorted(np.cumsum(p / p.sum()), rng.random(rows * active)).clip(0, vocab - 1)
    data = rng.exponential(1.0, rows * active).astype(np.float32)
    matrix = scipy.sparse.csr_matrix((data, cols, np.arange(0, rows * active + 1, active)), shape=(rows, vocab))
    matrix.sum_duplicates()
    return matrix


@pytest.fixture(scope="module")
def built():
    docs, queries = zipf_vectors(4000, 60, 0), zipf_vectors(100, 15, 1)
    index = SeismicSparseIndex.build(docs, SeismicSettings(n_postings=400, query_cut=15, heap_factor=0.9, threads=1))
    return docs, queries, index


def test_recall_against_the_exact_index_and_exact_scores(built):
    docs, queries, index = built
    _, exact_ids = SparseIndex.build(docs).search(queries, 10)
    scores, ids = index.search(queries, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids.tolist(), exact_ids.tolist(), strict=True)])
    assert recall >= 0.9
    # Each query's row holds its own hits (Seismic answers queries in any order) with their dot products.
    dots = np.asarray([[docs[d].dot(queries[q].T).toarray()[0, 0] for d in row] for q, row in enumerate(ids)])
    assert np.allclose(scores, dots, rtol=2e-3, atol=1e-3)  # Seismic keeps weights in half precision
    assert np.all(np.diff(scores, axis=1) <= 1e-6)


def test_save_load_answers_the_same(built, tmp_path):
    _, queries, index = built
    index.save(tmp_path / "seismic")
    again = SeismicSparseIndex.load(tmp_path / "seismic")
    assert (again.size, again.dimension, again.settings) == (index.size, index.dimension, index.settings)
    assert np.array_equal(again.search(queries, 10)[1], index.search(queries, 10)[1])


def test_bad_calls_say_what_is_wrong(built, tmp_path):
    _, _, index = built
    with pytest.raises(SbertError, match="queries have 7 dimensions; the index has 5000"):
        index.search(scipy.sparse.csr_matrix((1, 7), dtype=np.float32))
    with pytest.raises(SbertError, match="top_k must be positive"):
        index.search(zipf_vectors(1, 5, 2), 0)
    with pytest.raises(SbertError, match="not a Seismic index"):
        SeismicSparseIndex.load(tmp_path)


def test_an_index_folder_with_a_seismic_sparse_side(tiny_dirs, tmp_path):
    import json

    from tests.cli_runner import run_cli
    from tests.test_sparse_search import sparse_index_folder
    from tests.tiny_models import CORPUS

    dense_dir, splade_dir, corpus, idx, built = sparse_index_folder(
        tiny_dirs, tmp_path, "--sparse-approximate", "--seismic-postings", "50"
    )
    assert built.returncode == 0 and "with a Seismic approximate index" in built.stderr, built.stderr
    assert json.loads((idx / "sparse" / "sparse.json").read_text())["approximate"] is True
    assert json.loads((idx / "sparse" / "seismic" / "seismic.json").read_text())["n_postings"] == 50

    def hits(*flags: str) -> list[int]:
        result = run_cli("search", str(idx), CORPUS[2], "-k", "3", "--json", "--mode", "sparse", *flags)
        assert result.returncode == 0, result.stderr
        return [h["id"] for h in json.loads(result.stdout)["hits"]]

    assert hits() == hits("--exact")  # eight documents: nothing for the approximation to miss
    from sbert.search.index import SearchIndex
    from sbert.search.sparse_side import open_sparse_side
    from sbert.sparse import SparseEncoder

    model = SparseEncoder.load(splade_dir, device="cpu")
    assert isinstance(open_sparse_side(SearchIndex(idx), model), SeismicSparseIndex)
    assert isinstance(open_sparse_side(SearchIndex(idx), model, exact=True), SparseIndex)
    refused = run_cli("index", "build", str(corpus), "--out", str(tmp_path / "x"), "--model", str(dense_dir),
                      "--sparse-approximate")  # fmt: skip
    assert refused.returncode != 0 and "--sparse-approximate indexes the sparse side" in refused.stderr
