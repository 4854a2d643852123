"""MaxSim, MUVERA and the multi-vector index against brute-force references written out in loops."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sbert.search.multivector_index import IndexSettings, MultiVectorIndex
from sbert.vectors.maxsim import TokenSets, maxsim_matrix, maxsim_pairs
from sbert.vectors.muvera import MuveraParams, encode_documents, encode_queries


def unit_sets(rng: np.random.Generator, n: int, low: int, high: int, dim: int = 16) -> list[np.ndarray]:
    out = []
    for _ in range(n):
        m = rng.standard_normal((int(rng.integers(low, high)), dim)).astype(np.float32)
        out.append(m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12))
    return out


def brute_maxsim(q: np.ndarray, d: np.ndarray) -> float:
    """sum over query tokens of the best dot product over document tokens (0 for an empty query; -1e9, the
    reference's last-place score, for an empty document)."""
    if not len(d):
        return -1e9
    return sum(max(float(qi @ dj) for dj in d) for qi in q)


@pytest.mark.parametrize("budget", [1, 7, 10**8])
def test_maxsim_equals_brute_force_under_any_memory_budget(budget: int) -> None:
    rng = np.random.default_rng(0)
    queries, docs = unit_sets(rng, 6, 0, 9), unit_sets(rng, 13, 0, 12)
    expected = np.array([[brute_maxsim(q, d) for d in docs] for q in queries])
    np.testing.assert_allclose(maxsim_matrix(queries, docs, budget=budget), expected, atol=1e-5)
    lengths = np.array([max(len(q), 1) for q in queries])
    np.testing.assert_allclose(maxsim_matrix(queries, docs, mean=True), expected / lengths[:, None], atol=1e-5)
    np.testing.assert_allclose(maxsim_pairs(queries, docs[:6]), np.diag(expected[:, :6]), atol=1e-5)


def test_maxsim_equals_sentence_transformers() -> None:
    import torch
    from sentence_transformers.util.similarity import maxsim

    rng = np.random.default_rng(1)
    queries, docs = unit_sets(rng, 5, 1, 9), unit_sets(rng, 7, 1, 12)
    expected = maxsim([torch.from_numpy(q) for q in queries], [torch.from_numpy(d) for d in docs]).numpy()
    np.testing.assert_allclose(maxsim_matrix(queries, docs), expected, atol=1e-4)


def test_a_document_with_no_token_ranks_last_where_real_scores_are_negative() -> None:
    import torch
    from sentence_transformers.util.similarity import maxsim

    query = np.ones((3, 4), np.float32) / 2
    docs = [-np.ones((2, 4), np.float32) / 2, np.zeros((0, 4), np.float32), -np.ones((1, 4), np.float32)]
    expected = maxsim([torch.from_numpy(query)], [torch.from_numpy(d) for d in docs]).numpy()
    assert expected[0, 1] == -1e9  # the reference's own answer for the empty document
    np.testing.assert_allclose(maxsim_matrix([query], docs), expected, atol=1e-4)  # was 0: ranked first
    np.testing.assert_allclose(maxsim_pairs([query] * 3, docs), expected[0], atol=1e-4)
    index = MultiVectorIndex.build(TokenSets.pack(docs), IndexSettings(dimension=4, muvera=False, plaid=False))
    _, ids = index.search(TokenSets.pack([query]), top_k=3)
    assert list(ids[0]) == [0, 2, 1]


def brute_muvera(matrix: np.ndarray, params: MuveraParams, document: bool) -> np.ndarray:
    """MUVERA written out token by token: bucket by SimHash, sum (query) or mean (document), fill empty buckets."""
    planes, projections = params.draws()
    buckets = 1 << params.bits
    parts = []
    for r in range(params.reps):
        codes = [sum(1 << b for b in range(params.bits) if t @ planes[r][:, b] > 0) for t in matrix]
        block = np.zeros((buckets, params.proj), dtype=np.float64)
        for b in range(buckets):
            members = [t @ projections[r] for t, c in zip(matrix, codes, strict=True) if c == b]
            if members:
                block[b] = np.mean(members, axis=0) if document else np.sum(members, axis=0)
            elif document and len(matrix):
                nearest = min(range(len(matrix)), key=lambda i: (bin(codes[i] ^ b).count("1"), i))
                block[b] = matrix[nearest] @ projections[r]
        parts.append(block.ravel())
    return np.concatenate(parts)


@pytest.mark.parametrize("proj", [4, 16])
def test_muvera_equals_its_definition(proj: int) -> None:
    rng = np.random.default_rng(2)
    sets = unit_sets(rng, 5, 0, 7)
    params = MuveraParams(dim=16, bits=3, proj=proj, reps=4, seed=3)
    packed = TokenSets.pack(sets, 16)
    for encode, document in ((encode_queries, False), (encode_documents, True)):
        got = encode(packed.tokens, packed.offsets, params)
        expected = np.stack([brute_muvera(m, params, document) for m in sets])
        np.testing.assert_allclose(got, expected, atol=1e-5)


def clustered_corpus(rng: np.random.Generator, n_docs: int, dim: int = 16) -> tuple[TokenSets, TokenSets]:
    """Documents of noisy 'word' vectors; each query is a few words of one document, so the task has structure."""
    words = rng.standard_normal((200, dim)).astype(np.float32)
    docs, queries = [], []
    for _ in range(n_docs):
        chosen = words[rng.integers(0, len(words), int(rng.integers(5, 15)))]
        docs.append(chosen + 0.3 * rng.standard_normal(chosen.shape).astype(np.float32))
    for target in rng.integers(0, n_docs, 20):
        picked = docs[target][rng.integers(0, len(docs[target]), 4)]
        queries.append(picked + 0.3 * rng.standard_normal(picked.shape).astype(np.float32))
    norm = (
        [m / np.linalg.norm(m, axis=1, keepdims=True) for m in docs],
        [m / np.linalg.norm(m, axis=1, keepdims=True) for m in queries],
    )
    return TokenSets.pack(norm[0]), TokenSets.pack(norm[1])


def test_exact_search_is_the_brute_force_ranking() -> None:
    docs, queries = clustered_corpus(np.random.default_rng(4), 120)
    index = MultiVectorIndex.build(docs, IndexSettings(dimension=16, muvera=False, plaid=False))
    scores, ids = index.search(queries, top_k=5)
    full = np.array([[brute_maxsim(queries.matrix(q), docs.matrix(d)) for d in range(len(docs))]
                     for q in range(len(queries))])  # fmt: skip
    for q in range(len(queries)):
        np.testing.assert_allclose(scores[q], np.sort(full[q])[::-1][:5], atol=1e-2)  # float16 storage
        assert set(ids[q]) <= set(np.argsort(-full[q])[:8])


@pytest.mark.parametrize("method", ["muvera", "plaid"])
def test_approximate_methods_match_exact_given_every_candidate_and_recall_well_with_few(method: str) -> None:
    docs, queries = clustered_corpus(np.random.default_rng(5), 400)
    index = MultiVectorIndex.build(docs, IndexSettings(dimension=16))  # 256 centroids for 4,000 tokens
    _, exact_ids = index.search(queries, top_k=10)
    _, all_ids = index.search(queries, top_k=10, method=method, candidates=len(docs), probes=10**6)
    np.testing.assert_array_equal(all_ids, exact_ids)
    _, few_ids = index.search(queries, top_k=10, method=method, candidates=60)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(few_ids, exact_ids, strict=True)])
    assert recall >= 0.8, recall  # 60 of 400 documents at random would give 0.15


def test_index_round_trips_through_its_folder(tmp_path: Path) -> None:
    docs, queries = clustered_corpus(np.random.default_rng(6), 50)
    index = MultiVectorIndex.build(docs, IndexSettings(dimension=16, n_centroids=16))
    index.save(tmp_path / "ix")
    again = MultiVectorIndex.load(tmp_path / "ix")
    for method in ("exact", "muvera", "plaid"):
        np.testing.assert_array_equal(again.search(queries, method=method)[1], index.search(queries, method=method)[1])
    (tmp_path / "ix" / "offsets.npy").unlink()
    with pytest.raises(Exception, match=r"offsets\.npy"):
        MultiVectorIndex.load(tmp_path / "ix")


def test_cli_indexes_and_searches_with_a_colbert_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from sbert.cli.main import main
    from sbert.multivector import MultiVectorEncoder
    from tests.colbert_fixtures import build_native, build_punctuated_bert

    folder = build_native(build_punctuated_bert(tmp_path / "bert"), tmp_path / "colbert")
    corpus = ["a man is playing a guitar", "the cat sat on the mat", "it is raining today", "dogs run in the park"]
    (tmp_path / "corpus.txt").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    assert main(["index", "build", str(tmp_path / "corpus.txt"), "--out", str(tmp_path / "ix"), "--model",
                 str(folder)]) == 0  # fmt: skip
    model = MultiVectorEncoder.load(folder, device="cpu")
    expected = model.similarity(model.encode_query(["the cat sat"]), model.encode_document(corpus))[0]
    for method in ("exact", "muvera", "plaid"):
        capsys.readouterr()
        assert main(["search", str(tmp_path / "ix"), "the cat sat", "-k", "2", "--json", "--method", method]) == 0
        hits = json.loads(capsys.readouterr().out)["hits"]
        assert [h["text"] for h in hits] == [corpus[i] for i in np.argsort(-expected)[:2]]
        assert abs(hits[0]["score"] - float(expected.max())) <= 1e-2  # float16 storage
    from sbert import SentenceEncoder

    with pytest.raises(Exception, match="multi-vector"):
        SentenceEncoder.load(folder, device="cpu")
    calls = []
    real = MultiVectorEncoder.encode

    def spy(self, *args, **kwargs):
        calls.append(kwargs)
        return real(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:  # the build's encode flags reach the encode (once ignored)
        patch.setattr(MultiVectorEncoder, "encode", spy)
        assert main(["index", "build", str(tmp_path / "corpus.txt"), "--out", str(tmp_path / "ix2"), "--model",
                     str(folder), "--batch-tokens", "64", "--precision", "fp32"]) == 0  # fmt: skip
    assert calls[0]["batch_tokens"] == 64 and calls[0]["precision"] == "fp32" and calls[0]["backend"] == "torch"
    assert main(["index", "build", str(tmp_path / "corpus.txt"), "--out", str(tmp_path / "ix3"), "--model",
                 str(folder), "--dtype", "int8"]) == 2  # fmt: skip
    assert "--dtype int8: a multi-vector model" in capsys.readouterr().err


def test_compact_tokens_decode_as_defined_and_score_near_float32() -> None:
    from sbert.vectors.token_codes import decode_rows, encode_rows

    rng = np.random.default_rng(8)
    docs, queries = TokenSets.pack(unit_sets(rng, 40, 3, 30, dim=64)), TokenSets.pack(unit_sets(rng, 6, 2, 9, dim=64))
    x = docs.tokens
    codes, scales = encode_rows(x, "int8")
    assert codes.dtype == np.int8 and np.abs(codes).max() == 127  # each token's largest entry takes the top code
    np.testing.assert_allclose(decode_rows(codes, scales, 64), x, atol=float(scales.max()) / 254 + 1e-7)
    bits, _ = encode_rows(x, "binary")
    assert bits.shape == (len(x), 8)  # 64 dims in 8 bytes
    np.testing.assert_array_equal(decode_rows(bits, None, 64), np.where(x > 0, 1, -1) / np.float32(8.0))
    full = maxsim_matrix(queries, docs)
    sizes = {}
    for fmt, atol in (("float16", 1e-2), ("int8", 5e-2)):
        compact = docs.compact(fmt)
        sizes[fmt] = compact.nbytes
        np.testing.assert_allclose(maxsim_matrix(queries, compact), full, atol=atol)
        np.testing.assert_allclose(maxsim_pairs(queries, compact.subset(np.arange(6))),
                                   np.diag(full[:, :6]), atol=atol)  # fmt: skip
    binary = docs.compact("binary")
    assert binary.token_format == "binary" and binary.width == 64 and binary.subset(np.array([3, 1])).width == 64
    assert sizes["float16"] == x.nbytes // 2 and sizes["int8"] == x.nbytes // 4 + 4 * len(x)
    assert binary.nbytes == x.nbytes // 32
    order = np.argsort(-full, axis=1)[:, :3]
    rough = np.argsort(-maxsim_matrix(queries, binary), axis=1)[:, :10]
    assert np.mean([len(set(a) & set(b)) / 3 for a, b in zip(order, rough, strict=True)]) >= 0.6


@pytest.mark.parametrize("token_format", ["int8", "binary", "residual"])
def test_compact_indexes_rescore_to_the_exact_ranking_and_round_trip(token_format: str, tmp_path: Path) -> None:
    docs, queries = clustered_corpus(np.random.default_rng(9), 200)
    exact = MultiVectorIndex.build(docs, IndexSettings(dimension=16, muvera=False, plaid=False))
    index = MultiVectorIndex.build(docs, IndexSettings(dimension=16, n_centroids=32, token_format=token_format))
    assert index.docs.token_format == token_format and (index.rescore is not None) == (token_format == "binary")
    _, want = exact.search(queries, top_k=5)
    for method in ("exact", "muvera", "plaid"):
        _, got = index.search(queries, top_k=5, method=method, candidates=len(docs), probes=10**6)
        # every document is a candidate: int8 orders them as the float16 index does; 2-bit residuals lose some
        recall = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(got, want, strict=True)])
        assert recall >= (0.7 if token_format == "residual" else 0.95), (method, recall)
    index.save(tmp_path / "ix")
    again = MultiVectorIndex.load(tmp_path / "ix")
    assert again.settings.token_format == token_format
    for method in ("exact", "plaid"):
        np.testing.assert_array_equal(again.search(queries, method=method)[1], index.search(queries, method=method)[1])
    with pytest.raises(Exception, match="float32"):
        MultiVectorIndex.build(docs, IndexSettings(dimension=16, token_format="float32"))
    with pytest.raises(Exception, match="PLAID centroids"):
        MultiVectorIndex.build(docs, IndexSettings(dimension=16, plaid=False, token_format="residual"))


def test_residual_codec_is_centroid_plus_buckets_and_beats_the_centroid_alone() -> None:
    from sbert.search.centroids import assign, token_centroids
    from sbert.vectors.token_codes import ResidualCodec

    docs = TokenSets.pack(unit_sets(np.random.default_rng(10), 300, 5, 20, dim=32))
    centroids = token_centroids(docs.tokens, 64)
    ids = assign(docs.tokens, centroids)
    codec = ResidualCodec.fit(docs.tokens, ids, centroids, bits=2)
    packed = codec.encode(docs.tokens, ids)
    assert packed.shape == (len(docs.tokens), 8) and len(codec.cutoffs) == 3 and len(codec.weights) == 4
    buckets = np.searchsorted(codec.cutoffs, docs.tokens - centroids[ids])  # the definition, entry by entry
    want = centroids[ids] + codec.weights[buckets]
    np.testing.assert_allclose(codec.decode(packed, ids), want / np.linalg.norm(want, axis=1, keepdims=True),
                               atol=1e-6)  # fmt: skip
    decoded = codec.decode(packed, ids)
    cos = (decoded * docs.tokens).sum(1)
    alone = (centroids[ids] * docs.tokens).sum(1)
    assert cos.mean() > alone.mean() + 0.05 and cos.mean() > 0.9, (cos.mean(), alone.mean())


def test_encode_returns_compact_tokens_and_the_cli_builds_a_binary_index(tmp_path: Path, capsys) -> None:
    import json

    from sbert.cli.main import main
    from sbert.multivector import MultiVectorEncoder
    from tests.colbert_fixtures import build_native, build_punctuated_bert

    folder = build_native(build_punctuated_bert(tmp_path / "bert"), tmp_path / "colbert")
    corpus = ["a man is playing a guitar", "the cat sat on the mat", "it is raining today", "dogs run in the park"]
    model = MultiVectorEncoder.load(folder, device="cpu")
    query, docs = model.encode_query(["the cat sat"], output="packed"), model.encode_document(corpus, output="packed")
    int8 = model.encode_document(corpus, output="packed", token_format="int8")
    assert int8.token_format == "int8" and int8.nbytes == docs.nbytes // 4 + 4 * len(docs.tokens)  # codes + scales
    np.testing.assert_allclose(model.similarity(query, int8), model.similarity(query, docs), atol=5e-2)
    with pytest.raises(ValueError, match="needs output='packed'"):
        model.encode_document(corpus, token_format="binary")
    (tmp_path / "corpus.txt").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    assert main(["index", "build", str(tmp_path / "corpus.txt"), "--out", str(tmp_path / "ix"), "--model",
                 str(folder), "--token-format", "binary"]) == 0  # fmt: skip
    assert json.loads((tmp_path / "ix" / "index.json").read_text())["token_format"] == "binary"
    expected = model.similarity(query, docs)[0]
    capsys.readouterr()
    assert main(["search", str(tmp_path / "ix"), "the cat sat", "-k", "2", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert [h["text"] for h in hits] == [corpus[i] for i in np.argsort(-expected)[:2]]  # rescored with int8


def test_a_folder_saved_with_truncate_dim_is_indexed_and_searched_at_that_width(tmp_path: Path, capsys) -> None:
    import json

    import sbert
    from sbert.cli.main import main
    from sbert.multivector import MultiVectorEncoder
    from tests.colbert_fixtures import build_native, build_punctuated_bert

    folder = build_native(build_punctuated_bert(tmp_path / "bert"), tmp_path / "colbert")
    full = MultiVectorEncoder.load(folder, device="cpu")
    # 4 of the head's 8 dimensions, saved in config_sentence_transformers.json by the drop-in class
    sbert.MultiVectorEncoder(str(folder), truncate_dim=4, device="cpu").save(str(tmp_path / "cut"))
    cut = MultiVectorEncoder.load(tmp_path / "cut", device="cpu")
    corpus = ["a man is playing a guitar", "the cat sat on the mat", "it is raining today", "dogs run in the park"]
    (tmp_path / "corpus.txt").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    assert main(["index", "build", str(tmp_path / "corpus.txt"), "--out", str(tmp_path / "ix"), "--model",
                 str(tmp_path / "cut")]) == 0  # fmt: skip
    index = MultiVectorIndex.load(tmp_path / "ix")
    assert index.settings.dimension == 4 and index.docs.tokens.shape[1] == 4
    expected = cut.similarity(cut.encode_query(["the cat sat"]), cut.encode_document(corpus))[0]
    whole = full.similarity(full.encode_query(["the cat sat"], truncate_dim=8), full.encode_document(corpus))[0]
    assert np.abs(np.asarray(expected) - np.asarray(whole)).max() > 1e-3  # the cut changes the scores
    capsys.readouterr()
    assert main(["search", str(tmp_path / "ix"), "the cat sat", "-k", "4", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert [h["text"] for h in hits] == [corpus[i] for i in np.argsort(-np.asarray(expected))]
    assert max(abs(h["score"] - float(expected[corpus.index(h["text"])])) for h in hits) <= 1e-2  # float16 storage
