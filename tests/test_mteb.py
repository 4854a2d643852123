"""mteb evaluates sbert's models as they are (no wrapper written by the user), with the scores of mteb's own
sentence-transformers wrappers on the same folders: dense, sparse and cross-encoder, on local tasks."""

from __future__ import annotations

import numpy as np
import pytest

from sbert import CrossEncoder, SentenceEncoder, SparseEncoder
from tests.mteb_tasks import build_tasks
from tests.test_cross_encoder import _st_saved
from tests.test_sparse import build_mlm, st_splade

mteb = pytest.importorskip("mteb")


@pytest.fixture(scope="module")
def tasks(data_dir):
    return build_tasks(data_dir)


def scores(model, task) -> dict[str, float]:
    result = mteb.evaluate(model, [task], cache=None, show_progress_bar=False, encode_kwargs={"batch_size": 16})
    assert not result.exceptions, result.exceptions
    (task_result,) = result.task_results
    (split,) = task_result.scores["test"]
    return {k: v for k, v in split.items() if isinstance(v, float)}


# A random 32-wide model gives many SNLI documents near-equal vectors (it knows few of their words), so float
# rounding that differs between engines and CPUs (~1e-7) can swap two near-tied documents of one query.
# Such a swap moves that query's ndcg@10 by at most 1 - 1/log2(3) and its average precision by at most
# 0.5, so the tiny-model tests allow one swap over the task's 60 queries. That tolerance is wider than some
# prompt mistakes move a tiny model's score, so the prompt rule is checked exactly on the vectors mteb's call
# gets (test_prompts_follow_mtebs_rule_through_the_prompt_policy), and those vectors against the reference's.
ONE_SWAP = 0.5 / 60


def assert_same_scores(ours: dict[str, float], theirs: dict[str, float], main: str, every: bool = True) -> None:
    """With `every` (a real model) each metric mteb reports within 1e-4; without (a random tiny model, whose
    near-ties make rank metrics move with float rounding) the main score within one near-tie swap."""
    assert ours[main] == pytest.approx(theirs[main], abs=1e-4 if every else ONE_SWAP)
    assert ours.keys() == theirs.keys()
    for name, value in theirs.items() if every else ():
        assert ours[name] == pytest.approx(value, abs=1e-4, nan_ok=True), name


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_a_dense_model_as_it_is(real_model_dir, tasks):
    from sentence_transformers import SentenceTransformer

    ours = SentenceEncoder.load(real_model_dir, device="cpu")
    reference = SentenceTransformer(str(real_model_dir), device="cpu")
    assert ours.mteb_model_meta.embed_dim == 384
    for name, main in (("sts", "cosine_spearman"), ("retrieval", "ndcg_at_10"), ("reranking", "map_at_1000")):
        assert_same_scores(scores(ours, tasks[name]), scores(reference, tasks[name]), main)


def test_a_sparse_model_as_it_is(tiny_dirs, tasks, tmp_path):
    from sentence_transformers import SparseEncoder as STSparse

    folder = st_splade(build_mlm(tiny_dirs["bert"], tmp_path / "mlm"), tmp_path / "splade")
    ours, reference = SparseEncoder.load(folder, device="cpu"), STSparse(str(folder), device="cpu")
    assert_same_scores(scores(ours, tasks["retrieval"]), scores(reference, tasks["retrieval"]), "ndcg_at_10", False)


def test_a_cross_encoder_as_it_is(tiny_dirs, tasks, tmp_path):
    from sentence_transformers import CrossEncoder as STCrossEncoder

    folder = _st_saved(tiny_dirs["bert"], tmp_path / "cross")
    ours, reference = CrossEncoder.load(folder, device="cpu"), STCrossEncoder(str(folder), device="cpu")
    assert_same_scores(scores(ours, tasks["reranking"]), scores(reference, tasks["reranking"]), "map_at_1000", False)


def test_prompts_follow_mtebs_rule_through_the_prompt_policy(tiny_dirs, tasks, tmp_path):
    from sentence_transformers import SentenceTransformer

    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    # a task-type query prompt beats the generic one (mteb drops names of tasks it has not registered, as
    # this local one); documents get the generic document prompt
    model.settings.prompts = {"query": "a man ", "document": "the dog ", "Retrieval-query": "the cat "}
    model.save(tmp_path / "prompted")
    ours = SentenceEncoder.load(tmp_path / "prompted", device="cpu")
    reference = SentenceTransformer(str(tmp_path / "prompted"), device="cpu")
    mine, theirs = scores(ours, tasks["retrieval"]), scores(reference, tasks["retrieval"])
    assert_same_scores(mine, theirs, "ndcg_at_10", every=False)
    # mteb's call, by hand: the task-specific query prompt, the generic document prompt
    from mteb.types import PromptType

    texts = ["a man plays a guitar", "the cat sat on the mat"]
    batches = [{"text": texts[:1]}, {"text": texts[1:]}]
    call = {"task_metadata": tasks["retrieval"].metadata, "hf_split": "test", "hf_subset": "default"}
    queries = ours.encode(batches, prompt_type=PromptType.query, **call)
    assert np.array_equal(queries, ours.encode(texts, prompt_name="Retrieval-query"))
    assert np.abs(queries - reference.encode(texts, prompt="the cat ")).max() <= 1e-5  # the vectors mteb scores
    assert not np.allclose(queries, ours.encode_query(texts), atol=1e-4)
    assert np.array_equal(ours.encode(batches, prompt_type=PromptType.document, **call), ours.encode_document(texts))


def test_a_default_prompt_stays_out_of_mtebs_query_and_document_calls(tasks, tmp_path):
    """mteb calls encode_query / encode_document: with no prompt of mteb's naming, the model's own ("");
    never its default prompt."""
    from mteb.types import PromptType
    from sentence_transformers import SentenceTransformer

    model = SentenceEncoder.load()
    model.settings.prompts, model.settings.default_prompt_name = {"clf": "classify: "}, "clf"
    model.save(tmp_path / "default-only")
    ours = SentenceEncoder.load(tmp_path / "default-only", device="cpu")
    reference = SentenceTransformer(str(tmp_path / "default-only"), device="cpu")
    texts = ["a man plays a guitar", "the cat sat on the mat"]
    call = {"task_metadata": tasks["retrieval"].metadata, "hf_split": "test", "hf_subset": "default"}
    for kind, want in ((PromptType.query, reference.encode_query(texts)),
                       (PromptType.document, reference.encode_document(texts))):  # fmt: skip
        got = ours.encode([{"text": texts}], prompt_type=kind, **call)
        assert np.abs(got - want).max() <= 1e-5, kind


def test_a_multi_vector_model_as_it_is(tasks, tmp_path):
    from sentence_transformers import MultiVectorEncoder as STMultiVector

    from sbert import MultiVectorEncoder
    from tests.colbert_fixtures import build_native, build_punctuated_bert

    folder = build_native(build_punctuated_bert(tmp_path / "bert"), tmp_path / "colbert")
    ours, reference = MultiVectorEncoder.load(folder, device="cpu"), STMultiVector(str(folder), device="cpu")
    assert ours.mteb_model_meta.embed_dim == ours.embedding_dimension
    for name, main in (("retrieval", "ndcg_at_10"), ("reranking", "map_at_1000")):
        assert_same_scores(scores(ours, tasks[name]), scores(reference, tasks[name]), main, False)
