"""sentence-transformers 6.2's evaluators against sbert's, on the real default model and STS benchmark pairs.

Each evaluator is built with the same arguments in both libraries and called on the same folder: the
same keys in the same order, values within 1e-6 (fractions, not x100) and the same `primary_metric`.
"""

from __future__ import annotations

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
        "sequential": lambda lib: lib.SequentialEvaluator(
            [lib.EmbeddingSimilarityEvaluator(s1, s2, scores, name="a"), lib.TripletEvaluator(s1, s2, negatives)]
        ),
    }


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


def test_an_evaluator_takes_a_native_model_and_writes_its_csv(models, sts, tmp_path):
    s1, s2, scores = sts
    evaluator = ours.EmbeddingSimilarityEvaluator(s1, s2, scores, name="dev")
    native = SentenceEncoder.load(device="cpu")
    assert evaluator(native, str(tmp_path)) == pytest.approx(evaluator(models[0]), abs=1e-6)
    assert (tmp_path / "similarity_evaluation_dev_results.csv").read_text().startswith("epoch,steps,cosine_pearson")
