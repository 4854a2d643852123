"""`from sbert import CrossEncoder, SparseEncoder` against sentence-transformers 6.2's: each call run through both in
this process on the same folders (a tiny cross-encoder, a three-label one, a tiny SPLADE, each saved by
sentence-transformers), compared on Python type, dtype, shape, layout and values (1e-5). The calls come from 6.2's
documented `predict` / `rank` / `encode` arguments and methods, not from sbert's code."""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import pytest
import torch

from sbert import CrossEncoder as Ours
from sbert import SentenceEncoder
from sbert import SparseEncoder as OursSparse
from sbert.reranker.model import CrossEncoder as NativeCrossEncoder
from sbert.sparse import SparseEncoder as NativeSparseEncoder
from tests.test_cross_encoder import PAIRS, _st_saved
from tests.test_sparse import build_mlm, st_splade

st = pytest.importorskip("sentence_transformers")
TEXTS = ["A man is eating food.", "A man is riding a horse.", "Someone is eating a meal.", "the cat sat on the mat",
         "Dogs RUN in the park, twice!"]  # fmt: skip


@pytest.fixture(scope="module")
def cross(tiny_dirs, tmp_path_factory) -> tuple[Ours, Any]:
    folder = str(_st_saved(tiny_dirs["bert"], tmp_path_factory.mktemp("ce") / "cross"))
    return Ours(folder, device="cpu"), st.CrossEncoder(folder, device="cpu")


@pytest.fixture(scope="module")
def three_labels(tiny_dirs, tmp_path_factory) -> tuple[Ours, Any]:
    folder = tmp_path_factory.mktemp("ce3") / "nli"
    model = st.CrossEncoder(str(tiny_dirs["bert"]), num_labels=3, device="cpu")
    with torch.no_grad():
        for param in model.model.classifier.parameters():
            param.copy_(torch.randn(param.shape, generator=torch.Generator().manual_seed(1)) * 6.0)
    model.save(str(folder))
    return Ours(str(folder), device="cpu"), st.CrossEncoder(str(folder), device="cpu")


@pytest.fixture(scope="module")
def splade(tiny_dirs, tmp_path_factory) -> tuple[OursSparse, Any]:
    root = tmp_path_factory.mktemp("splade")
    folder = str(st_splade(build_mlm(tiny_dirs["bert"], root / "mlm"), root / "splade"))
    return OursSparse(folder, device="cpu"), st.SparseEncoder(folder, device="cpu")


def same(a: Any, b: Any) -> None:
    """Same Python type; tensors: dtype, shape, layout, device and values (1e-5); lists and dicts item by item."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            same(a[key], b[key])
    elif isinstance(a, torch.Tensor):
        assert (a.dtype, a.shape, a.layout, a.device) == (b.dtype, b.shape, b.layout, b.device)
        dense = (lambda t: t.to_dense()) if a.is_sparse else (lambda t: t)
        torch.testing.assert_close(dense(a), dense(b), atol=1e-5, rtol=1e-5)
    elif isinstance(a, np.ndarray | np.generic):
        assert a.dtype == b.dtype and np.shape(a) == np.shape(b), (a.dtype, b.dtype, np.shape(a), np.shape(b))
        np.testing.assert_allclose(a, b, atol=1e-5)
    elif isinstance(a, float):
        assert a == pytest.approx(b, abs=1e-5)
    else:
        assert a == b


PREDICT_CALLS = [
    {}, {"batch_size": 2}, {"show_progress_bar": False}, {"convert_to_tensor": True}, {"convert_to_numpy": False},
    {"activation_fn": torch.nn.Identity()}, {"activation_fn": torch.nn.Tanh()}, {"prompt": "Query: "},
    {"convert_to_tensor": True, "activation_fn": torch.nn.Identity()},
]  # fmt: skip


@pytest.mark.parametrize("call", PREDICT_CALLS, ids=str)
def test_predict(cross, call):
    ours, theirs = cross
    same(ours.predict(PAIRS, **call), theirs.predict(PAIRS, **call))


@pytest.mark.parametrize("call", [{}, {"convert_to_tensor": True}], ids=str)
def test_predict_one_pair_and_none(cross, call):
    ours, theirs = cross
    same(ours.predict(PAIRS[0], **call), theirs.predict(PAIRS[0], **call))
    same(ours.predict(list(PAIRS[1]), **call), theirs.predict(list(PAIRS[1]), **call))
    if not call:
        same(ours.predict([]), theirs.predict([]))


@pytest.mark.parametrize("call", [{}, {"apply_softmax": True}, {"convert_to_tensor": True}, {"convert_to_numpy": False},
                                  {"activation_fn": torch.nn.Sigmoid()}], ids=str)  # fmt: skip
def test_predict_three_labels(three_labels, call):
    ours, theirs = three_labels
    same(ours.predict(PAIRS, **call), theirs.predict(PAIRS, **call))


RANK_CALLS = [{}, {"top_k": 2}, {"top_k": 10}, {"return_documents": True}, {"batch_size": 1, "top_k": 3},
              {"activation_fn": torch.nn.Identity()}, {"prompt": "Query: "}]  # fmt: skip


@pytest.mark.parametrize("call", RANK_CALLS, ids=str)
def test_rank(cross, call):
    ours, theirs = cross
    query, docs = PAIRS[0][0], [b for _, b in PAIRS] + TEXTS
    same(ours.rank(query, docs, **call), theirs.rank(query, docs, **call))


def test_cross_encoder_constructor_getters_and_save_both_ways(cross, tiny_dirs, tmp_path):
    ours, theirs = cross
    folder = str(ours.source_dir)
    short_ours, short_theirs = Ours(folder, max_length=12, device="cpu"), st.CrossEncoder(folder, max_length=12,
                                                                                          device="cpu")  # fmt: skip
    same(short_ours.predict(PAIRS), short_theirs.predict(PAIRS))
    assert (ours.num_labels, ours.config.num_labels) == (theirs.num_labels, theirs.config.num_labels) == (1, 1)
    assert type(ours.activation_fn) is type(theirs.activation_fn) is torch.nn.Sigmoid
    assert ours.tokenizer("a cat")["input_ids"] == theirs.tokenizer("a cat")["input_ids"]
    ours.save_pretrained(str(tmp_path / "saved"))
    same(st.CrossEncoder(str(tmp_path / "saved"), device="cpu").predict(PAIRS), theirs.predict(PAIRS))
    fresh = Ours(str(tiny_dirs["bert"]), num_labels=2, device="cpu")  # a plain encoder: a fresh head, as 6.2
    assert fresh.num_labels == 2 and type(fresh.activation_fn) is torch.nn.Identity


def test_cross_encoder_sbert_names_keep_working(cross):
    ours, _ = cross
    assert isinstance(ours, NativeCrossEncoder)
    native = NativeCrossEncoder.load(ours.source_dir, device="cpu")
    np.testing.assert_allclose(ours.predict(PAIRS, batch_size=None, batch_tokens=64, activation=False,
                                            activation_fn=torch.nn.Identity()),
                               native.predict(PAIRS, activation=False), atol=1e-6)  # fmt: skip
    assert type(Ours.load(ours.source_dir, device="cpu")) is Ours  # sbert's loader on the subclass


ENCODE_CALLS = [
    {}, {"batch_size": 2}, {"show_progress_bar": False}, {"convert_to_sparse_tensor": False},
    {"convert_to_tensor": False}, {"convert_to_tensor": False, "convert_to_sparse_tensor": False},
    {"max_active_dims": 8}, {"prompt": "query: "}, {"save_to_cpu": True}, {"device": "cpu"},
]  # fmt: skip


@pytest.mark.parametrize("method", ["encode", "encode_query", "encode_document"])
@pytest.mark.parametrize("call", ENCODE_CALLS, ids=str)
def test_sparse_encode(splade, method, call):
    ours, theirs = splade
    same(getattr(ours, method)(TEXTS, **call), getattr(theirs, method)(TEXTS, **call))


@pytest.mark.parametrize("call", [{}, {"convert_to_sparse_tensor": False}, {"max_active_dims": 4}], ids=str)
def test_sparse_encode_one_string(splade, call):
    ours, theirs = splade
    same(ours.encode(TEXTS[0], **call), theirs.encode(TEXTS[0], **call))


def test_sparse_similarity_decode_sparsity_and_getters(splade):
    ours, theirs = splade
    a, b = theirs.encode(TEXTS[:3]), theirs.encode(TEXTS[2:])
    same(ours.similarity(a, b), theirs.similarity(a, b))
    same(ours.similarity(a.to_dense(), b.to_dense()), theirs.similarity(a.to_dense(), b.to_dense()))
    same(ours.similarity_pairwise(a, b), theirs.similarity_pairwise(a, b))
    assert ours.similarity_fn_name == theirs.similarity_fn_name == "dot"
    for row, top in ((a, 3), (a, None), (a[0], 2)):
        assert _rounded(ours.decode(row, top_k=top)) == _rounded(theirs.decode(row, top_k=top))
    assert ours.sparsity(a) == pytest.approx(theirs.sparsity(a), rel=1e-5)  # it counts in float32
    assert ours.get_sentence_embedding_dimension() == theirs.get_embedding_dimension()
    assert ours.max_seq_length == theirs.max_seq_length
    assert ours.tokenizer("a cat")["input_ids"] == theirs.tokenizer("a cat")["input_ids"]


def test_sparse_constructor_arguments_and_save_both_ways(splade, tmp_path):
    ours, _ = splade
    folder = str(ours.source_dir)
    args = {"max_active_dims": 5, "similarity_fn_name": "cosine", "prompts": {"query": "q: "}}
    mine, reference = OursSparse(folder, device="cpu", **args), st.SparseEncoder(folder, device="cpu", **args)
    same(mine.encode_query(TEXTS), reference.encode_query(TEXTS))
    same(mine.similarity(mine.encode(TEXTS), mine.encode(TEXTS)),
         reference.similarity(reference.encode(TEXTS), reference.encode(TEXTS)))  # fmt: skip
    mine.save_pretrained(str(tmp_path / "saved"))
    same(st.SparseEncoder(str(tmp_path / "saved"), device="cpu").encode_query(TEXTS), reference.encode_query(TEXTS))


def test_sparse_sbert_names_keep_working(splade):
    ours, _ = splade
    assert isinstance(ours, NativeSparseEncoder)
    native = NativeSparseEncoder.load(ours.source_dir, device="cpu").encode(TEXTS)  # scipy CSR, as before
    assert (ours.encode(TEXTS, convert_to="csr") != native).nnz == 0
    assert ours.decode(native, top=2) == NativeSparseEncoder.load(ours.source_dir).decode(native, top=2)


def _rounded(decoded: Any) -> Any:
    if decoded and isinstance(decoded[0], tuple):
        return [(token, round(weight, 4)) for token, weight in decoded]
    return [_rounded(row) for row in decoded]


# sentence-transformers' retrieve & rerank example (its documentation), the import line changed and nothing else.
EXAMPLE = """
from {lib} import CrossEncoder, SentenceTransformer, SparseEncoder

bi_encoder = SentenceTransformer("{dense}", device="cpu")
cross_encoder = CrossEncoder("{cross}", device="cpu")
sparse = SparseEncoder("{splade}", device="cpu")
corpus = ["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
          "A man is riding a horse.", "A woman is playing violin.", "A monkey is playing drums."]
query = "A man is eating pasta."
corpus_embeddings = bi_encoder.encode(corpus, convert_to_tensor=True)
query_embedding = bi_encoder.encode(query, convert_to_tensor=True)
hits = bi_encoder.similarity(query_embedding, corpus_embeddings)[0].topk(4).indices.tolist()
scores = cross_encoder.predict([(query, corpus[i]) for i in hits])
ranked = cross_encoder.rank(query, [corpus[i] for i in hits], return_documents=True)
lexical = sparse.similarity(sparse.encode_query(query), sparse.encode_document(corpus))
out = (hits, scores.tolist(), ranked, lexical.tolist(), sparse.decode(sparse.encode(query), top_k=3))
"""


def test_retrieve_and_rerank_example_runs_with_only_the_import_changed(cross, splade):
    folders = {"dense": SentenceEncoder.load().source_dir, "cross": cross[0].source_dir, "splade": splade[0].source_dir}
    results = {}
    for lib in ("sentence_transformers", "sbert"):
        scope: dict[str, Any] = {}
        exec(textwrap.dedent(EXAMPLE.format(lib=lib, **folders)), scope)
        results[lib] = scope["out"]
    (hits, scores, ranked, lexical, decoded), reference = results["sbert"], results["sentence_transformers"]
    assert hits == reference[0] and [r["corpus_id"] for r in ranked] == [r["corpus_id"] for r in reference[2]]
    np.testing.assert_allclose(scores, reference[1], atol=1e-5)
    np.testing.assert_allclose(lexical, reference[3], atol=1e-4)
    assert _rounded(decoded) == _rounded(reference[4])


def test_what_the_models_tell_about_themselves(cross, splade):
    for ours, theirs in (cross, splade):
        assert ours.model_type == theirs.model_type
        assert (ours.modalities, ours.supports("text"), ours.supports("image")) == (
            theirs.modalities, theirs.supports("text"), theirs.supports("image"))  # fmt: skip
        assert (ours.dtype, ours.get_backend(), ours.get_max_seq_length()) == (
            theirs.dtype, theirs.get_backend(), theirs.get_max_seq_length())  # fmt: skip
