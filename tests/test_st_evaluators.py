"""sentence-transformers 6.2's evaluators against sbert's, on the real default model and STS benchmark pairs.

Each evaluator is built with the same arguments in both libraries and called on the same folder: the
same keys in the same order, values within 1e-6 (fractions, not x100) and the same `primary_metric`.
"""

from __future__ import annotations

import importlib

import pytest

from sbert import SentenceEncoder
from sbert import SentenceTransformer as Ours
from sbert import evaluation as ours

st = pytest.importorskip("sentence_transformers")
theirs = pytest.importorskip("sentence_transformers.evaluation")
FUNCTIONS = ["cosine", "euclidean", "manhattan", "dot"]


@pytest.fixture(scope="module")
def models():
    folder = str(SentenceEncoder.load().source_dir)
    return Ours(folder, device="cpu"), st.SentenceTransformer(folder, device="cpu")


@pytest.fixture(scope="module")
def sts(data_dir):
    rows = [line.split("\t") for line in (data_dir / "stsbenchmark" / "sts-dev.csv").read_text("utf-8").splitlines()]
    rows = rows[:40]  # 40 pairs: every evaluator embeds them in both libraries
    return [r[5] for r in rows], [r[6] for r in rows], [float(r[4]) / 5 for r in rows]


def cases(sts):
    s1, s2, scores = sts
    labels = [int(s > 0.6) for s in scores]
    negatives = s2[1:] + s2[:1]
    queries = {f"q{i}": s1[i] for i in range(20)}
    corpus = {f"d{i}": s2[i] for i in range(40)}
    relevant = {f"q{i}": {f"d{i}", f"d{i + 20}"} for i in range(20)}
    return {
        "similarity": lambda lib: lib.EmbeddingSimilarityEvaluator(s1, s2, scores, name="sts-dev"),
        "similarity-4": lambda lib: lib.EmbeddingSimilarityEvaluator(s1, s2, scores, similarity_fn_names=FUNCTIONS),
        "similarity-main": lambda lib: lib.EmbeddingSimilarityEvaluator(s1, s2, scores, main_similarity="dot"),
        "binary": lambda lib: lib.BinaryClassificationEvaluator(s1, s2, labels, name="dup"),
        "binary-4": lambda lib: lib.BinaryClassificationEvaluator(s1, s2, labels, similarity_fn_names=FUNCTIONS),
        "triplet": lambda lib: lib.TripletEvaluator(s1, s2, negatives, name="t"),
        "triplet-4": lambda lib: lib.TripletEvaluator(s1, s2, negatives, similarity_fn_names=FUNCTIONS, margin=0.1),
        "ir": lambda lib: lib.InformationRetrievalEvaluator(queries, corpus, relevant, name="ir"),
        "ir-k": lambda lib: lib.InformationRetrievalEvaluator(
            queries, corpus, relevant, ndcg_at_k=[3, 5], accuracy_at_k=[2], map_at_k=[10]
        ),
        "reranking": lambda lib: lib.RerankingEvaluator(
            [{"query": s1[i], "positive": [s2[i]], "negative": s2[i + 1 : i + 4]} for i in range(20)], at_k=3, name="rr"
        ),
        "translation": lambda lib: lib.TranslationEvaluator(s1, s2, name="tr"),
        "paraphrases": lambda lib: lib.ParaphraseMiningEvaluator(
            {f"s{i}": t for i, t in enumerate(s1 + s2)},
            [(f"s{i}", f"s{i + 40}") for i in range(0, 40, 2)] + [("s1", "s3"), ("s3", "s5")],
            add_transitive_closure=True,
            top_k=5,
        ),
        "sequential": lambda lib: lib.SequentialEvaluator(
            [lib.EmbeddingSimilarityEvaluator(s1, s2, scores, name="a"), lib.TripletEvaluator(s1, s2, negatives)]
        ),
    }


@pytest.mark.e2e  # every evaluator on the real default model, both libraries: `make test-e2e` (make test's budget)
def test_evaluators_answer_as_6_2s(models, sts, tmp_path):
    mine_model, their_model = models
    for name, build in cases(sts).items():
        mine, reference = build(ours), build(theirs)
        got, want = mine(mine_model, str(tmp_path / "ours")), reference(their_model, str(tmp_path / "theirs"))
        assert list(got) == list(want), name
        # Thresholds are distances of ~10 summed in another order: they agree to float32 rounding (rel 1e-6).
        assert got == pytest.approx(want, rel=1e-6, abs=1e-6), name
        assert mine.primary_metric == reference.primary_metric, name
    # The MSE evaluator's teacher is a model too: each library's own.
    s1, s2, _ = sts
    got = ours.MSEEvaluator(s1, s2, teacher_model=mine_model)(mine_model)
    assert got == pytest.approx(theirs.MSEEvaluator(s1, s2, teacher_model=their_model)(their_model), abs=1e-6)
    frame = [{"en": a, "de": b, "fr": b.upper()} for a, b in zip(s1, s2, strict=True)]
    got = ours.MSEEvaluatorFromDataFrame(frame, mine_model, [("en", "de"), ("en", "fr")], name="d")(mine_model)
    want = theirs.MSEEvaluatorFromDataFrame(frame, their_model, [("en", "de"), ("en", "fr")], name="d")(their_model)
    assert got == pytest.approx(want, abs=1e-6)


def test_label_accuracy_scores_a_softmax_head_as_6_2(models, sts):
    from torch.utils.data import DataLoader

    from sbert import InputExample
    from sbert.losses import SoftmaxLoss

    mine_model, their_model = models
    s1, s2, scores = sts
    examples = [InputExample(texts=[a, b], label=int(s * 3) % 3) for a, b, s in zip(s1, s2, scores, strict=True)]
    head = SoftmaxLoss(mine_model, mine_model.get_embedding_dimension(), num_labels=3)
    losses = importlib.import_module("sentence_transformers.sentence_transformer.losses")
    reference = losses.SoftmaxLoss(their_model, their_model.get_embedding_dimension(), num_labels=3)
    reference.classifier.load_state_dict(head.classifier.state_dict())
    want = theirs.LabelAccuracyEvaluator(DataLoader(examples, batch_size=8), "nli", reference)(their_model)
    got = ours.LabelAccuracyEvaluator(DataLoader(examples, batch_size=8), "nli", head)(mine_model)
    assert got == pytest.approx(want, abs=1e-9) and 0 < got["nli_accuracy"] < 1


def test_an_evaluator_takes_a_native_model_and_writes_its_csv(models, sts, tmp_path):
    s1, s2, scores = sts
    evaluator = ours.EmbeddingSimilarityEvaluator(s1, s2, scores, name="dev")
    native = SentenceEncoder.load(device="cpu")
    assert evaluator(native, str(tmp_path)) == pytest.approx(evaluator(models[0]), abs=1e-6)
    assert (tmp_path / "similarity_evaluation_dev_results.csv").read_text().startswith("epoch,steps,cosine_pearson")


def test_reciprocal_rank_fusion_answers_as_6_2(tmp_path):
    sparse_theirs = importlib.import_module("sentence_transformers.sparse_encoder.evaluation")
    sparse_ours = importlib.import_module("sbert.sparse_encoder.evaluation")
    docs = [f"d{i}" for i in range(12)]
    dense = [{"query_id": q, "query": f"q{q}", "positive": [docs[q], docs[q + 3]], "documents": docs[q : q + 8]}
             for q in range(4)]  # fmt: skip
    sparse = [{**s, "documents": list(reversed(docs))[: 6 + s["query_id"]]} for s in dense]
    got = sparse_ours.ReciprocalRankFusionEvaluator(dense, sparse, at_k=5, name="rrf", write_predictions=True)
    want = sparse_theirs.ReciprocalRankFusionEvaluator(dense, sparse, at_k=5, name="rrf", write_predictions=True)
    ours_out, theirs_out = got(str(tmp_path / "ours")), want(str(tmp_path / "theirs"))
    assert list(ours_out) == list(theirs_out) and ours_out == pytest.approx(theirs_out, abs=1e-9)
    name = "ReciprocalRankFusion_evaluation_rrf_predictions.jsonl"
    assert (tmp_path / "ours" / name).read_text() == (tmp_path / "theirs" / name).read_text()
    with pytest.raises(ValueError, match="Query ID mismatch at index 0"):
        sparse_ours.ReciprocalRankFusionEvaluator(dense[:1], [{**sparse[1]}])
