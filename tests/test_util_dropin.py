"""`from sbert import util` against `from sentence_transformers import util`: each call in both, same inputs,
same Python types, dtypes, shapes and values (1e-5; quantized codes and index lists exact).

The calls are those of sentence-transformers 6.2's documented util functions, on the default model's
real vectors of real STS benchmark sentences (clusters and paraphrases exist there) and on random rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert import util as ours

theirs = pytest.importorskip("sentence_transformers.util")


@pytest.fixture(scope="module")
def vectors(sts_test_path) -> np.ndarray:
    lines = sts_test_path.read_text(encoding="utf-8").splitlines()[:120]
    sentences = list(dict.fromkeys(s for line in lines for s in line.split("\t")[5:7]))
    rows = SentenceEncoder.load(device="cpu").encode(sentences)
    _, first = np.unique(rows.round(4), axis=0, return_index=True)  # an uncased model maps some lines to one vector:
    return rows[np.sort(first)]  # without exact ties, the order of equal scores cannot differ


def same(a: Any, b: Any) -> None:
    """Same type, and for tensors / arrays the same dtype, shape and values within 1e-5."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and a.device == b.device
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, atol=1e-5)
    else:
        assert a == pytest.approx(b, abs=1e-5) if isinstance(a, float) else a == b


SCORES = ["cos_sim", "dot_score", "pairwise_cos_sim", "pairwise_dot_score", "manhattan_sim", "euclidean_sim"]


@pytest.mark.parametrize("name", SCORES)
@pytest.mark.parametrize("kind", ["numpy", "tensor", "list", "one row"])
def test_score_functions(vectors, name, kind):
    a, b = vectors[:7], vectors[7:14]
    if kind == "tensor":
        a, b = torch.from_numpy(a), torch.from_numpy(b)
    elif kind == "list":
        a, b = list(torch.from_numpy(a)), list(torch.from_numpy(b))
    elif kind == "one row":
        a, b = a[0], b[0]
    same(getattr(ours, name)(a, b), getattr(theirs, name)(a, b))


def test_normalize_embeddings(vectors):
    rows = torch.from_numpy(vectors[:5] * 3)
    same(ours.normalize_embeddings(rows), theirs.normalize_embeddings(rows))


@pytest.mark.parametrize("options", [{}, {"top_k": 3}, {"top_k": 5, "corpus_chunk_size": 7, "query_chunk_size": 2},
                                     {"score_function": "dot_score"}])  # fmt: skip
def test_semantic_search(vectors, options):
    if "score_function" in options:
        options = {**options, "score_function": getattr(ours, options["score_function"])}
        other = {**options, "score_function": theirs.dot_score}
    else:
        other = options
    queries, corpus = torch.from_numpy(vectors[:6]), torch.from_numpy(vectors[6:])
    mine, reference = ours.semantic_search(queries, corpus, **options), theirs.semantic_search(queries, corpus, **other)
    assert [[h["corpus_id"] for h in hits] for hits in mine] == [[h["corpus_id"] for h in hits] for hits in reference]
    for a, b in zip(mine, reference, strict=True):
        for x, y in zip(a, b, strict=True):
            assert type(x["corpus_id"]) is type(y["corpus_id"]) and type(x["score"]) is type(y["score"])
            assert x["score"] == pytest.approx(y["score"], abs=1e-5)


@pytest.mark.parametrize(
    "options", [{}, {"top_k": 2, "max_pairs": 10}, {"query_chunk_size": 9, "corpus_chunk_size": 13}]
)
def test_paraphrase_mining(vectors, options):
    mine, reference = ours.paraphrase_mining_embeddings(vectors, **options), theirs.paraphrase_mining_embeddings(
        torch.from_numpy(vectors), **options)  # fmt: skip
    assert_same_pairs(mine, reference)


def assert_same_pairs(mine: list, reference: list) -> None:
    """The same [score, i, j] lists, best first; pairs of exactly equal score (real float ties) in either order."""
    assert np.allclose([p[0] for p in mine], [p[0] for p in reference], atol=1e-5)
    assert sorted((p[1], p[2]) for p in mine) == sorted((p[1], p[2]) for p in reference)
    assert all(isinstance(p[0], float) and isinstance(p[1], int) and p[1] < p[2] for p in mine)


def test_paraphrase_mining_with_the_model():
    from sentence_transformers import SentenceTransformer

    model = SentenceEncoder.load(device="cpu")
    sentences = ["A man eats food.", "Someone is eating a meal.", "A cat sits on a mat.", "The kitten is on the rug.",
                 "Stocks fell today.", "The market dropped."]  # fmt: skip
    reference = theirs.paraphrase_mining(SentenceTransformer(str(model.source_dir), device="cpu"), sentences)
    assert_same_pairs(ours.paraphrase_mining(model, sentences), reference)


@pytest.mark.parametrize(("threshold", "size"), [(0.75, 2), (0.6, 3), (0.5, 5), (0.95, 1)])
def test_community_detection(vectors, threshold, size):
    for rows in (vectors, torch.from_numpy(vectors)):
        mine = ours.community_detection(rows, threshold=threshold, min_community_size=size)
        assert mine == theirs.community_detection(rows, threshold=threshold, min_community_size=size)


@pytest.mark.parametrize("precision", ["float32", "int8", "uint8", "binary", "ubinary"])
def test_quantize_embeddings(vectors, precision):
    rows = vectors[:20]
    same(ours.quantize_embeddings(rows, precision), theirs.quantize_embeddings(rows, precision))
    calibration = vectors[20:]
    if precision in ("int8", "uint8"):
        got = ours.quantize_embeddings(rows, precision, calibration_embeddings=calibration)
        assert np.array_equal(got, theirs.quantize_embeddings(rows, precision, calibration_embeddings=calibration))


def test_sparse_rows_one_row_and_token_matrices(vectors):
    """The inputs 6.2 also takes: SparseEncoder's COO rows, a single 1-D row, and lists of token matrices."""
    dense = torch.from_numpy(np.where(vectors[:6] > 0.05, vectors[:6], 0.0))
    sparse = dense.to_sparse()
    for name in ("cos_sim", "dot_score"):
        same(getattr(ours, name)(sparse, sparse), getattr(theirs, name)(sparse, sparse))
    mine, reference = ours.semantic_search(sparse, sparse, top_k=3), theirs.semantic_search(sparse, sparse, top_k=3)
    assert [[h["corpus_id"] for h in q] for q in mine] == [[h["corpus_id"] for h in q] for q in reference]
    np.testing.assert_allclose(
        [h["score"] for q in mine for h in q], [h["score"] for q in reference for h in q], atol=1e-5
    )  # 6.2 normalises sparse rows its own way: scores agree to rounding
    row = torch.from_numpy(vectors[0])
    same(ours.normalize_embeddings(row), theirs.normalize_embeddings(row))
    for precision in ("int8", "uint8", "binary", "ubinary"):
        same(ours.quantize_embeddings(vectors[0], precision, calibration_embeddings=vectors),
             theirs.quantize_embeddings(vectors[0], precision, calibration_embeddings=vectors))  # fmt: skip
        tokens = [vectors[:3], vectors[3:8]]
        mine, reference = ours.quantize_embeddings(tokens, precision), theirs.quantize_embeddings(tokens, precision)
        assert type(mine) is type(reference) is list
        for a, b in zip(mine, reference, strict=True):
            same(a, b)


def test_paraphrase_mining_with_repeated_sentences(vectors):
    # Sentences 3 and 4 appear twice, 7 three times: a row may then tie with its copies and drop out of its own hits.
    rows = np.concatenate([vectors[:20], vectors[3:5], vectors[7:8], vectors[7:8]])
    for top_k in (1, 2, 5):
        mine = ours.paraphrase_mining_embeddings(torch.from_numpy(rows), top_k=top_k)
        reference = theirs.paraphrase_mining_embeddings(torch.from_numpy(rows), top_k=top_k)
        # As many pairs with the same scores, best first. Which copy of a repeated sentence a row pairs with is
        # arbitrary in both (their scores tie exactly), so pairs are compared where no score ties.
        assert [p[0] for p in mine] == pytest.approx([p[0] for p in reference])
        scores = [round(p[0], 6) for p in reference]
        untied = {tuple(p[1:]) for p in reference if scores.count(round(p[0], 6)) == 1}
        assert untied <= {tuple(p[1:]) for p in mine}


def test_maxsim_family_scores_as_6_2():
    g = torch.Generator().manual_seed(3)
    queries = [torch.randn(n, 8, generator=g) for n in (3, 5, 1)]
    documents = [torch.randn(n, 8, generator=g) for n in (4, 2, 7)]
    padded = torch.nn.utils.rnn.pad_sequence(documents, batch_first=True)
    mask = torch.nn.utils.rnn.pad_sequence([torch.ones(len(d)) for d in documents], batch_first=True).bool()
    half_mask = mask.clone()
    half_mask[0, :2] = False  # drop two real tokens of the first document
    padded_queries = torch.nn.utils.rnn.pad_sequence(queries, batch_first=True)
    weights = torch.rand(padded_queries.shape[:2], generator=g)
    weights[0, 0] = 0.0
    for name in ("maxsim", "mean_maxsim", "maxsim_pairwise", "mean_maxsim_pairwise"):
        for args, kwargs in (
            ((queries, documents), {}),
            ((queries, padded), {"b_mask": mask}),
            ((queries, padded), {"b_mask": half_mask}),
            ((queries, documents), {"length_normalize": True, "chunk_elements": 64}),
            ((queries[0].numpy(), documents[0].numpy()), {}),
            # a fractional query mask weighs each token's best match; a document mask keeps non-zero entries
            ((padded_queries, padded), {"a_mask": weights, "b_mask": mask.float() * 0.5}),
            ((padded_queries, padded), {"a_mask": weights, "length_normalize": True}),
        ):
            same(getattr(ours, name)(*args, **kwargs), getattr(theirs, name)(*args, **kwargs))
    with pytest.raises(ValueError, match="same number of items"):
        ours.maxsim_pairwise(queries[:2], documents)
    with pytest.raises(ValueError, match=">= 0"):
        ours.maxsim(padded_queries, padded, a_mask=-weights)
    rows = torch.tensor([[0.0, 1.5, 0.0, 2.0], [0.0, 0.5, 0.0, 0.0]])
    for x in (rows, rows.to_sparse(), rows[0]):
        same(ours.compute_count_vector(x), theirs.compute_count_vector(x))


def test_small_helpers_answer_as_6_2():
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    for name in ("get_rank", "get_world_size", "is_dist_initialized", "is_datasets_available",
                 "is_accelerate_available", "is_training_available"):  # fmt: skip
        assert getattr(ours, name)() == getattr(theirs, name)(), name
    assert ours.fullname(MultipleNegativesRankingLoss) == theirs.fullname(MultipleNegativesRankingLoss)
    assert ours.fullname(3) == theirs.fullname(3) == "int"
    path = "sentence_transformers.sentence_transformer.losses.MultipleNegativesRankingLoss"
    assert ours.import_from_string(path) is theirs.import_from_string(path)
    with pytest.raises(ImportError, match="does not define"):
        ours.import_from_string("sbert.util.nothing_here")
