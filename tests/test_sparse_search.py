"""The sparse inverted index against brute force, and hybrid fusion of dense and sparse rankings."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

from sbert.errors import SbertError
from sbert.search.hybrid import hybrid_fuse
from sbert.search.sparse_index import SparseIndex, sparse_search


def random_sparse(rows: int, width: int, active: int, seed: int) -> scipy.sparse.csr_matrix:
    rng = np.random.default_rng(seed)
    cols = np.concatenate([rng.choice(width, active, replace=False) for _ in range(rows)])
    data = rng.random(rows * active, dtype=np.float32) + 0.01
    return scipy.sparse.csr_matrix((data, (np.repeat(np.arange(rows), active), cols)), shape=(rows, width))


def test_index_equals_brute_force_and_numpy():
    docs, queries = random_sparse(2000, 500, 20, 0), random_sparse(70, 500, 6, 1)  # 70 queries: two blocks
    index = SparseIndex.build(docs)
    scores, ids = index.search(queries, top_k=10)
    brute = sparse_search(queries, docs, top_k=10)
    dense = queries.toarray() @ docs.toarray().T
    want = np.argsort(-dense, axis=1, kind="stable")[:, :10]
    np.testing.assert_array_equal(ids, want)
    np.testing.assert_array_equal(brute[1], want)
    np.testing.assert_allclose(scores, np.take_along_axis(dense, want, axis=1), rtol=1e-5)


def test_add_save_load_and_edges(tmp_path):
    docs, queries = random_sparse(300, 100, 10, 2), random_sparse(5, 100, 4, 3)
    grown = SparseIndex.build(docs[:120])
    grown.add(docs[120:])
    whole = SparseIndex.build(docs)
    np.testing.assert_array_equal(grown.search(queries, 7)[1], whole.search(queries, 7)[1])
    whole.save(tmp_path / "idx")
    np.testing.assert_array_equal(SparseIndex.load(tmp_path / "idx").search(queries, 7)[1], whole.search(queries, 7)[1])
    lonely = scipy.sparse.csr_matrix(([1.0], ([0], [99])), shape=(1, 100))  # a term no document holds
    scores, ids = SparseIndex.build(docs[:, :99]).search(lonely[:, :99], 3)
    assert (ids == -1).all() and np.isneginf(scores).all()
    with pytest.raises(SbertError, match="queries have 101 dimensions; the index has 100"):
        whole.search(random_sparse(1, 101, 2, 4))
    with pytest.raises(SbertError, match="top_k must be positive"):
        whole.search(queries, 0)
    with pytest.raises(SbertError, match="not a sparse index"):
        SparseIndex.load(tmp_path)


def test_hybrid_rrf_and_weighted():
    dense = (np.array([[0.9, 0.8, 0.1]]), np.array([[1, 2, 3]]))
    sparse = (np.array([[12.0, 5.0, -np.inf]]), np.array([[3, 2, -1]]))  # 3 is first here, 1 is missing
    scores, ids = hybrid_fuse(dense, sparse, top_k=3)
    # rrf: doc 3 = 1/63 + 1/61 (0.032266) just beats doc 2 = 1/62 + 1/62 (0.032258); doc 1 = 1/61
    assert ids.tolist() == [[3, 2, 1]]
    np.testing.assert_allclose(scores[0], [1 / 63 + 1 / 61, 2 / 62, 1 / 61], rtol=1e-6)
    assert hybrid_fuse(dense, sparse, 3, "weighted", alpha=1.0)[1].tolist() == [[1, 2, 3]]
    assert hybrid_fuse(dense, sparse, 2, "weighted", alpha=0.0)[1].tolist() == [[3, 1]]  # ties at 0 by id
    w_scores, w_ids = hybrid_fuse(dense, sparse, 3, "weighted", alpha=0.5)
    # dense' = 1, 0.875, 0 for 1, 2, 3; sparse' = 1, 0 for 3, 2
    assert w_ids.tolist() == [[1, 3, 2]]
    np.testing.assert_allclose(w_scores[0], [0.5, 0.5, 0.4375], rtol=1e-6)
    for kwargs, message in [({"method": "max"}, "hybrid method 'max'"), ({"alpha": 2.0}, r"alpha=2.0: must be in")]:
        with pytest.raises(SbertError, match=message):
            hybrid_fuse(dense, sparse, **kwargs)
    with pytest.raises(SbertError, match="one dense and one sparse ranking per query"):
        hybrid_fuse(dense, (np.zeros((2, 1)), np.zeros((2, 1), dtype=int)))


def test_encode_sparse_writes_what_the_engines_ingest(tiny_dirs, tmp_path):
    import json

    from sbert.sparse import SparseEncoder
    from tests.cli_runner import run_cli
    from tests.test_sparse import build_mlm, st_splade
    from tests.tiny_models import CORPUS

    folder = st_splade(build_mlm(tiny_dirs["bert"], tmp_path / "mlm"), tmp_path / "splade")
    model = SparseEncoder.load(folder, device="cpu")
    want = model.encode(CORPUS, max_active_dims=5)
    source = tmp_path / "texts.txt"
    source.write_text("\n".join(CORPUS) + "\n")
    for fmt in ("qdrant", "opensearch"):
        out = tmp_path / f"{fmt}.jsonl"
        result = run_cli("encode-sparse", "--model", str(folder), "--input", str(source), "--output", str(out),
                         "--format", fmt, "--max-active-dims", "5")  # fmt: skip
        assert result.returncode == 0, result.stderr
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["id"] for r in rows] == list(range(len(CORPUS)))
        for row, vector in zip(rows, want, strict=True):
            order = np.argsort(vector.indices)
            if fmt == "qdrant":
                assert row["vector"]["sparse"]["indices"] == vector.indices[order].tolist()
                np.testing.assert_allclose(row["vector"]["sparse"]["values"], vector.data[order], rtol=1e-6)
            else:
                tokens = model.mlm.tokenizer.convert_ids_to_tokens(vector.indices[order].tolist())
                assert list(row["sparse"]) == tokens
    out = tmp_path / "int8.jsonl"  # SPLADE as one int8 graph: the rows of the library's onnx-int8 encode
    result = run_cli("encode-sparse", "--model", str(folder), "--input", str(source), "--output", str(out),
                     "--backend", "onnx-int8")  # fmt: skip
    assert result.returncode == 0, result.stderr
    want = model.encode(CORPUS, backend="onnx-int8")
    for row, vector in zip((json.loads(line) for line in out.read_text().splitlines()), want, strict=True):
        values = vector.data[np.argsort(vector.indices)]
        np.testing.assert_allclose(row["vector"]["sparse"]["values"], values, rtol=1e-5)
    bad = run_cli("encode-sparse", "--model", str(folder), "--input", str(source), "--output", str(tmp_path / "x"),
                  "--max-active-dims", "0")  # fmt: skip
    assert bad.returncode != 0 and "--max-active-dims must be positive" in bad.stderr
    assert not (tmp_path / "x").exists()


def sparse_index_folder(tiny_dirs, tmp_path, *flags: str):
    """A tiny dense model, a tiny SPLADE and `sbert index build` of CORPUS with a sparse side (plus `flags`).

    Returns the dense and SPLADE folders, the corpus file, the index folder and the build's result.
    """
    from sbert import SentenceEncoder
    from tests.cli_runner import run_cli
    from tests.test_sparse import build_mlm, st_splade
    from tests.tiny_models import CORPUS

    dense_dir = tmp_path / "dense"
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(dense_dir)
    splade_dir = st_splade(build_mlm(tiny_dirs["bert"], tmp_path / "mlm"), tmp_path / "splade")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(CORPUS) + "\n")
    idx = tmp_path / "idx"
    built = run_cli("index", "build", str(corpus), "--out", str(idx), "--model", str(dense_dir), "--sparse-model",
                    str(splade_dir), *flags)  # fmt: skip
    return dense_dir, splade_dir, corpus, idx, built


def test_index_with_a_sparse_side_searches_sparse_and_hybrid(tiny_dirs, tmp_path):
    import json

    from sbert import SentenceEncoder
    from sbert.search import semantic_search
    from sbert.sparse import SparseEncoder
    from tests.cli_runner import run_cli
    from tests.tiny_models import CORPUS

    dense_dir, splade_dir, corpus, idx, built = sparse_index_folder(tiny_dirs, tmp_path)
    assert built.returncode == 0 and f"sparse side: {len(CORPUS)} documents" in built.stderr, built.stderr
    query = "a cat on a mat"

    def hits(*flags: str) -> list[int]:
        result = run_cli("search", str(idx), query, "-k", "3", "--json", *flags)
        assert result.returncode == 0, result.stderr
        return [h["id"] for h in json.loads(result.stdout)["hits"]]

    splade = SparseEncoder.load(splade_dir, device="cpu")
    sparse_want = np.argsort(-SparseEncoder.similarity(splade.encode_query([query]), splade.encode_document(CORPUS))[0],
                             kind="stable")[:3].tolist()  # fmt: skip
    assert hits("--mode", "sparse") == sparse_want
    dense = SentenceEncoder.load(dense_dir, device="cpu")
    dense_rank = semantic_search(dense.encode_query([query]), dense.encode(CORPUS), top_k=len(CORPUS))
    sparse_rank = SparseIndex.build(splade.encode_document(CORPUS)).search(splade.encode_query([query]), len(CORPUS))
    assert hits("--mode", "hybrid") == hybrid_fuse(dense_rank, sparse_rank, 3)[1][0].tolist()
    assert hits("--mode", "hybrid", "--fusion", "weighted", "--alpha", "1") == dense_rank[1][0][:3].tolist()
    info_path = idx / "sparse" / "sparse.json"
    info_path.write_text(json.dumps({**json.loads(info_path.read_text()), "model_digest": "0" * 64}))
    stale = run_cli("search", str(idx), query, "--mode", "sparse")
    assert stale.returncode != 0 and "its sparse side was built by other weights than the query model" in stale.stderr
    plain = tmp_path / "plain"
    assert run_cli("index", "build", str(corpus), "--out", str(plain), "--model", str(dense_dir)).returncode == 0
    refused = run_cli("search", str(plain), query, "--mode", "sparse")
    assert refused.returncode != 0 and "no sparse side (build the index with --sparse-model)" in refused.stderr


def test_eval_scores_dense_sparse_and_hybrid_rankings_of_a_collection(tiny_dirs, tmp_path):
    import json

    from sbert import SentenceEncoder
    from sbert.data import load_dataset
    from sbert.data.beir import read_beir, write_beir
    from sbert.data.beir_build import beir_from_nli
    from sbert.evaluation.retrieval import evaluate_ir, ir_metrics
    from sbert.sparse import SparseEncoder
    from tests.cli_runner import run_cli
    from tests.conftest import SHARED_DATA
    from tests.test_sparse import build_mlm, st_splade

    pairs = load_dataset(f"nli:{SHARED_DATA / 'snli'}:test")
    folder = tmp_path / "snli"
    corpus, queries, qrels = beir_from_nli(pairs.subset(list(range(300)), "snli"))
    write_beir(folder, corpus, queries, {"test": qrels})
    dense_dir = tmp_path / "dense"
    splade_dir = st_splade(build_mlm(tiny_dirs["bert"], tmp_path / "mlm"), tmp_path / "s")
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(dense_dir)
    out = tmp_path / "results"
    result = run_cli("eval", "-t", f"ir:{folder}", "--model", str(dense_dir), "--sparse-model", str(splade_dir),
                     "-o", str(out), "--device", "cpu")  # fmt: skip
    assert result.returncode == 0, result.stderr
    modes = json.loads((out / "results.json").read_text())["tasks"][f"ir:{folder}"]["modes"]
    assert list(modes) == ["dense", "sparse", "hybrid-rrf", "hybrid-weighted"]
    collection = read_beir(folder)
    # Dense is exactly what evaluate_ir reports; sparse is the brute-force ranking's metrics.
    dense = SentenceEncoder.load(dense_dir, device="cpu")
    assert modes["dense"] == pytest.approx(evaluate_ir(dense, collection))
    splade = SparseEncoder.load(splade_dir, device="cpu")
    scores, rows = sparse_search(splade.encode_query(collection.queries), splade.encode_document(collection.corpus),
                                 100)  # fmt: skip
    hits = []
    for row_scores, row_ids in zip(scores.tolist(), rows.tolist(), strict=True):
        ranked = sorted((-x, collection.corpus_ids[i]) for x, i in zip(row_scores, row_ids, strict=True) if i >= 0)
        hits.append([doc for _, doc in ranked])
    want = ir_metrics(hits, [collection.qrels[q] for q in collection.query_ids])
    assert modes["sparse"]["ndcg@10"] == pytest.approx(want["ndcg@10"])
    assert "hybrid-rrf | ndcg@10" in (out / "results.md").read_text()
    refused = run_cli("eval", "-t", f"stsb:{SHARED_DATA / 'stsbenchmark' / 'sts-dev.csv'}", "--model", str(dense_dir),
                      "--sparse-model", str(splade_dir))  # fmt: skip
    assert refused.returncode != 0 and "--sparse-model works on retrieval hits: add an ir:DIR task" in refused.stderr
