"""6.2's `MultiVectorEncoder` calls with the import changed: its constructor, return types and scores.

Both libraries load the same ColBERT folder (6.2's own layout, built by 6.2, and PyLate's); each call gives
6.2's types (a list of torch tensors, one tensor for a string, numpy arrays when asked), shapes and values
(1e-5), and scores as torch tensors.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import sbert
from sbert.errors import SbertError
from tests.colbert_fixtures import DOCUMENTS, QUERIES, build_native, build_punctuated_bert, build_pylate

st = pytest.importorskip("sentence_transformers")

EXPANSION = {"strategy": "fixed", "attend": False, "length": 16}
LAYOUTS = {
    "native": lambda b, p: build_native(b, p, query_length=16, document_length=24, query_expansion=EXPANSION),
    "pylate": lambda b, p: build_pylate(b, p),
}
DOCS = DOCUMENTS[:-1]  # the last holds an unknown word, whose handling differs by layout (tests/test_multivector.py)


@pytest.fixture(scope="module", params=sorted(LAYOUTS))
def pair(request, tmp_path_factory):
    base = tmp_path_factory.mktemp("mv-dropin")
    folder = LAYOUTS[request.param](build_punctuated_bert(base / "bert"), base / request.param)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sbert.MultiVectorEncoder(str(folder), device="cpu"), st.MultiVectorEncoder(str(folder), device="cpu")


def same(ours, theirs):
    assert type(ours) is type(theirs) and len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert type(a) is type(b) and a.shape == b.shape
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-5)


def test_encode_calls_give_6_2s_types_and_vectors(pair):
    ours, theirs = pair
    same(ours.encode_query(QUERIES), theirs.encode_query(QUERIES))
    same(ours.encode_document(DOCS), theirs.encode_document(DOCS))
    # A task routes (length, expansion, skiplist) and adds no prompt. On a PyLate folder sbert keeps PyLate's
    # [Q] / [D] marker token for the task (6.2 reads the markers as prompts, so a task alone drops them).
    tasks = (None, "query", "document") if ours.mv_settings.flavor != "pylate" else (None,)
    for task in tasks:
        same(ours.encode(DOCS, task=task), theirs.encode(DOCS, task=task))
    same(ours.encode(DOCS, convert_to_numpy=True), theirs.encode(DOCS, convert_to_numpy=True))
    same(ours.encode(DOCS, normalize_embeddings=True), theirs.encode(DOCS, normalize_embeddings=True))
    single, reference = ours.encode_query(QUERIES[0]), theirs.encode_query(QUERIES[0])
    assert isinstance(single, torch.Tensor) and single.shape == reference.shape
    assert ours.get_embedding_dimension() == theirs.get_embedding_dimension()
    assert ours.similarity_fn_name == theirs.similarity_fn_name


def test_scores_are_6_2s_tensors(pair):
    ours, theirs = pair
    q, d = ours.encode_query(QUERIES), ours.encode_document(DOCS)
    tq, td = theirs.encode_query(QUERIES), theirs.encode_document(DOCS)
    scores, expected = ours.similarity(q, d), theirs.similarity(tq, td)
    assert isinstance(scores, torch.Tensor) and scores.shape == expected.shape
    torch.testing.assert_close(scores, expected, atol=1e-5, rtol=1e-5)
    n = min(len(q), len(d))
    torch.testing.assert_close(ours.similarity_pairwise(q[:n], d[:n]), theirs.similarity_pairwise(tq[:n], td[:n]),
                               atol=1e-5, rtol=1e-5)  # fmt: skip
    torch.testing.assert_close(ours.similarity(q, d, length_normalize=True),
                               theirs.similarity(tq, td, length_normalize=True), atol=1e-5, rtol=1e-5)  # fmt: skip


def test_built_from_modules_saved_and_served_as_sbert_s_own(pair, tmp_path):
    ours, theirs = pair
    rebuilt = sbert.MultiVectorEncoder(modules=ours.chain(), device="cpu")
    assert rebuilt.embedding_dimension == ours.embedding_dimension
    ours.save(str(tmp_path / "saved"))
    assert (tmp_path / "saved" / "README.md").is_file()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = st.MultiVectorEncoder(str(tmp_path / "saved"), device="cpu")
    same(again.encode_document(DOCS), theirs.encode_document(DOCS))
    loaded = sbert.MultiVectorEncoder.load(str(tmp_path / "saved"), device="cpu")  # sbert's own constructor
    assert isinstance(loaded, sbert.MultiVectorEncoder)
    same(loaded.encode_document(DOCS), ours.encode_document(DOCS))
    native = sbert.native.native(ours)  # what the server and the index take: sbert's arrays
    assert type(native) is sbert.multivector.MultiVectorEncoder
    assert isinstance(native.encode_document(DOCS)[0], np.ndarray)


def test_what_sbert_does_not_take_is_one_line(pair):
    ours, _ = pair
    with pytest.raises(ValueError, match="no `convert_to_tensor`"):
        ours.encode(DOCS, convert_to_tensor=True)
    with pytest.raises(SbertError, match="output_value=None"):
        ours.encode(DOCS, output_value=None)
    with pytest.raises(SbertError, match="maxsim or meanmaxsim"):
        sbert.MultiVectorEncoder(modules=ours.chain(), similarity_fn_name="cosine")
    from sbert.modules.multi_vector_mask import MultiVectorMask

    with pytest.raises(SbertError, match="MultiVectorMask's skiplist"):  # not dropped silently
        sbert.MultiVectorEncoder(modules=[*ours.chain(), MultiVectorMask({"skiplist_words": ["."]})])
    from sbert.multi_vector_encoder import evaluation, losses

    pooling = object()  # 6.3's token poolers: sbert keeps every token, so any pooler is refused by name
    for build in (lambda: ours.encode(DOCS, token_pooling=pooling),
                  lambda: sbert.MultiVectorEncoder(modules=ours.chain(), token_pooling=pooling),
                  lambda: evaluation.MultiVectorTripletEvaluator(["a"], ["b"], ["c"], token_pooling=pooling),
                  lambda: evaluation.MultiVectorRerankingEvaluator([], token_pooling=pooling),
                  lambda: losses.MultiVectorTokenPoolingLoss(ours, losses.MultiVectorMultipleNegativesRankingLoss(ours),
                                                             [None, pooling])):  # fmt: skip
        with pytest.raises(SbertError, match=r"token.pooling is not supported by sbert"):
            build()


def test_multi_vector_evaluators_give_sentence_transformers_keys_and_values(pair):
    from sentence_transformers.multi_vector_encoder import evaluation as theirs_ev

    from sbert.multi_vector_encoder import evaluation as ours_ev
    from tests.st_training_fixtures import ANCHORS, NEGATIVES, POSITIVES

    ours, theirs = pair
    queries = {str(i): a for i, a in enumerate(ANCHORS)}
    corpus = {str(i): p for i, p in enumerate(POSITIVES + NEGATIVES[:3])}
    relevant = {str(i): {str(i)} for i in range(len(ANCHORS))}
    samples = [
        {"query": a, "positive": [p], "negative": NEGATIVES[:3]} for a, p in zip(ANCHORS, POSITIVES, strict=True)
    ]
    ways = [[p, n] for p, n in zip(POSITIVES, NEGATIVES, strict=True)]
    teacher = np.random.default_rng(0).normal(size=(len(ANCHORS), 2)).astype("float32")
    builders = (lambda ev: ev.MultiVectorInformationRetrievalEvaluator(queries, corpus, relevant, name="ir"),
                lambda ev: ev.MultiVectorTripletEvaluator(ANCHORS, POSITIVES, NEGATIVES, name="triplet"),
                lambda ev: ev.MultiVectorRerankingEvaluator(samples, at_k=3, name="rr"),
                lambda ev: ev.MultiVectorDistillationEvaluator(ANCHORS, ways, teacher, temperature=2.0, name="kd"),
                lambda ev: ev.MultiVectorDistillationEvaluator(ANCHORS, POSITIVES, teacher[:, 0],
                                                               name="flat"),
                # 6.3's truncate_dim: every token vector cut to its first 8 dimensions, then unit length again
                lambda ev: ev.MultiVectorInformationRetrievalEvaluator(queries, corpus, relevant, name="ir8",
                                                                       truncate_dim=8),
                lambda ev: ev.MultiVectorTripletEvaluator(ANCHORS, POSITIVES, NEGATIVES, name="t8", truncate_dim=8),
                lambda ev: ev.MultiVectorRerankingEvaluator(samples, at_k=3, name="rr8", truncate_dim=8),
                lambda ev: ev.MultiVectorDistillationEvaluator(ANCHORS, ways, teacher, name="kd8",
                                                               truncate_dim=8))  # fmt: skip
    for build in builders:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want, evaluator = build(theirs_ev)(theirs), build(ours_ev)
            got = evaluator(ours)
        assert set(got) == set(want)
        assert got == pytest.approx(want, abs=1e-6)
        reference = build(theirs_ev)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reference(theirs)
        assert evaluator.primary_metric == reference.primary_metric


def test_a_plain_encoder_gets_6_2s_new_colbert_head(tmp_path):
    bert = build_punctuated_bert(tmp_path / "bert")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = st.MultiVectorEncoder(str(bert), device="cpu")
    ours = sbert.MultiVectorEncoder(str(bert), device="cpu")
    assert ours.get_embedding_dimension() == theirs.get_embedding_dimension() == 128
    assert ours.settings.prompts == theirs.prompts == {"query": "", "document": ""}
    with torch.no_grad():  # the projection starts random in both: give ours 6.2's
        ours.chain()[1].linear.weight.copy_(theirs[1].linear.weight)
    same(ours.encode_query(QUERIES), theirs.encode_query(QUERIES))
    same(ours.encode_document(DOCS), theirs.encode_document(DOCS))


def test_truncate_dim_cuts_saves_and_loads_as_sentence_transformers(pair, tmp_path):
    """6.3's truncate_dim: per call, per model, and saved in the folder, read by either library the same way."""
    from sbert.multivector.model import MultiVectorEncoder as NativeMultiVectorEncoder

    ours, theirs = pair
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(ours.encode(DOCS, truncate_dim=4), theirs.encode(DOCS, truncate_dim=4))
        same(ours.encode_query(QUERIES, truncate_dim=3), theirs.encode_query(QUERIES, truncate_dim=3))
        theirs.truncate_dim = 4
        try:
            theirs.save(str(tmp_path / "theirs4"))
            want = theirs.encode_document(DOCS)
        finally:
            theirs.truncate_dim = None
        native = NativeMultiVectorEncoder.load(tmp_path / "theirs4")
        assert native.embedding_dimension == 4 and native.head_dimension == 8
        for a, b in zip(native.encode_document(DOCS), want, strict=True):
            np.testing.assert_allclose(a, b.numpy(), atol=1e-5)
        packed = native.encode_document(DOCS, output="packed")
        assert packed.tokens.shape[1] == 4
        cut = sbert.MultiVectorEncoder(str(tmp_path / "theirs4"), device="cpu")
        assert cut.get_embedding_dimension() == 4 and cut.truncate_dim == 4
        same(cut.encode_document(DOCS), want)
        mine = sbert.MultiVectorEncoder(modules=ours.chain(), device="cpu", truncate_dim=2)
        mine.save(str(tmp_path / "ours2"))
        reloaded = st.MultiVectorEncoder(str(tmp_path / "ours2"), device="cpu")
        assert reloaded.truncate_dim == 2
        same(mine.encode(DOCS), reloaded.encode(DOCS))
    with pytest.raises(ValueError, match="truncate_dim must be a positive integer"):
        sbert.MultiVectorEncoder(modules=ours.chain(), truncate_dim=0)
