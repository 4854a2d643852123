"""Retrieval evaluation on BEIR-layout folders built from the shared SNLI and STS data: metrics equal to
sentence-transformers' InformationRetrievalEvaluator, bounded-memory search, bad input, the builder
command, and dev-set selection by nDCG@10 during training."""

import json
import logging

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.data import load_dataset
from sbert.data.beir import read_beir, split_ir_spec, write_beir
from sbert.data.beir_build import beir_from_nli, beir_from_scored_pairs
from sbert.data.common import DataFormatError
from sbert.evaluation.retrieval import evaluate_ir, ir_metrics, query_metrics, search
from sbert.training import Objective, Stage, TrainConfig, Trainer
from tests.cli_runner import run_cli
from tests.conftest import SHARED_DATA

SNLI_TEST = f"nli:{SHARED_DATA / 'snli'}:test"


@pytest.fixture(scope="module")
def snli_ir(tmp_path_factory: pytest.TempPathFactory):
    """The SNLI-derived collection over the first 1,500 test pairs."""
    pairs = load_dataset(SNLI_TEST)
    folder = tmp_path_factory.mktemp("ir") / "snli"
    corpus, queries, rows = beir_from_nli(pairs.subset(list(range(1500)), "snli"))
    write_beir(folder, corpus, queries, {"test": rows})
    return folder


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_metrics_equal_sentence_transformers_evaluator(snli_ir):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    collection = read_beir(snli_ir)
    ours = evaluate_ir(SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu"), collection)
    reference = InformationRetrievalEvaluator(
        dict(zip(collection.query_ids, collection.queries, strict=True)),
        dict(zip(collection.corpus_ids, collection.corpus, strict=True)),
        {q: set(docs) for q, docs in collection.qrels.items()},
        accuracy_at_k=[1, 10], precision_recall_at_k=[1, 10, 100], map_at_k=[100], write_csv=False,
    )  # fmt: skip
    theirs = reference(SentenceTransformer(str(SentenceEncoder.load().source_dir), device="cpu"))
    pairs = {name: theirs[f"cosine_{name}"] for name in ours}
    for name, value in pairs.items():
        assert abs(ours[name] / 100 - value) <= 1e-6, name
    assert 40 < ours["ndcg@10"] < 95  # a real model on real data: neither trivial nor broken


def test_graded_metrics_by_hand():
    hits = ["a", "x", "b", "y"]
    relevant = {"a": 1, "b": 2}
    m = query_metrics(hits, relevant)
    ideal = 2 / np.log2(2) + 1 / np.log2(3)
    assert m["ndcg@10"] == pytest.approx((1 / np.log2(2) + 2 / np.log2(4)) / ideal)
    assert m["mrr@10"] == 1 and m["map@100"] == pytest.approx((1 + 2 / 3) / 2)
    assert m["recall@1"] == 0.5 and m["recall@10"] == 1 and m["accuracy@1"] == 1
    assert query_metrics(["x"] * 12 + ["a"], {"a": 1})["mrr@10"] == 0  # found past rank 10
    assert ir_metrics([["x"], ["a"]], [{"a": 1}, {"a": 1}])["accuracy@1"] == 50


def test_search_over_chunks_equals_one_pass():
    rng = np.random.default_rng(0)
    queries, corpus = rng.normal(size=(2100, 8)), rng.normal(size=(700, 8))
    whole = search(queries, iter([corpus]))
    chunked = search(queries, iter(np.array_split(corpus, 9)))
    np.testing.assert_array_equal(whole[1], chunked[1])
    np.testing.assert_allclose(whole[0], chunked[0], atol=1e-6)
    cosine = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ (
        corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
    ).T
    np.testing.assert_array_equal(whole[1][:, 0], cosine.argmax(1))


def test_builders_on_the_shared_data():
    corpus, queries, rows = beir_from_nli(load_dataset(SNLI_TEST))
    relevant = {(q, d) for q, d, s in rows if s > 0}
    assert len(queries) > 3000 and len(corpus) > 9000
    assert {q for q, _ in relevant} == set(queries)  # every query has an entailed hypothesis
    assert {s for *_, s in rows} == {0, 1}
    corpus, queries, rows = beir_from_scored_pairs(
        load_dataset(f"stsb:{SHARED_DATA / 'stsbenchmark' / 'sts-test.csv'}")
    )
    assert 200 < len(queries) < 400 and all(s == 1 for *_, s in rows)
    with pytest.raises(DataFormatError, match="needs NLI pairs"):
        beir_from_nli(load_dataset(f"stsb:{SHARED_DATA / 'stsbenchmark' / 'sts-dev.csv'}"))


def test_bad_beir_files_name_file_and_line(snli_ir, tmp_path, caplog):
    folder = tmp_path / "c"
    write_beir(
        folder, {"d1": "a doc", "d2": "another"}, {"q1": "a query"}, {"test": [("q1", "d1", 1), ("q9", "d2", 1)]}
    )
    with caplog.at_level(logging.WARNING, logger="sbert.data.beir"):
        collection = read_beir(folder)
    assert collection.unknown_ids == 1 and len(collection) == 1
    assert sum("1 judgement(s) name a query or document" in r.getMessage() for r in caplog.records) == 1
    with pytest.raises(DataFormatError, match="lacks"):
        read_beir(folder, strict=True)
    strict = run_cli("eval", "-t", f"ir:{folder}", "--strict")
    assert strict.returncode == 2 and "1 judgement(s) name a query or document" in strict.stderr
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "ok"}\n{"_id": "d2"\n')
    with pytest.raises(DataFormatError, match=r"corpus.jsonl:2: expected a JSON object"):
        read_beir(folder)
    assert split_ir_spec(f"{snli_ir}:dev") == (snli_ir, "dev") and split_ir_spec(str(snli_ir)) == (snli_ir, "test")
    with pytest.raises(DataFormatError, match="no such file"):
        read_beir(snli_ir, "dev")


def test_qrels_keep_the_last_row_and_refuse_a_non_integer_score(tmp_path):
    folder = tmp_path / "c"
    rows = [("q1", "d1", 1), ("q1", "d2", 2), ("q1", "d1", 0), ("q2", "d2", 0), ("q2", "d2", 1)]
    write_beir(folder, {"d1": "a doc", "d2": "another"}, {"q1": "a query", "q2": "b"}, {"test": rows})
    # BEIR keeps the last row of a pair: d1 is no longer relevant to q1, d2 becomes relevant to q2.
    assert read_beir(folder).qrels == {"q1": {"d2": 2}, "q2": {"d2": 1}}
    qrels = folder / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "q1\td1\t\u00b2\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"test\.tsv:7: score '\u00b2' is not an integer"):
        read_beir(folder)


@pytest.mark.e2e
def test_data_command_writes_a_collection_eval_scores(tmp_path):
    out = tmp_path / "sts-ir"
    built = run_cli("data", "beir-from-sts", "--input", f"stsb:{SHARED_DATA / 'stsbenchmark' / 'sts-dev.csv'}",
                    "--output", str(out))  # fmt: skip
    assert built.returncode == 0 and "queries" in built.stdout, built.stderr
    wrong = f"stsb:{SHARED_DATA / 'stsbenchmark' / 'sts-dev.csv'}"  # scored pairs, not NLI
    bad = run_cli("data", "beir-from-nli", "--input", wrong, "--output", str(out))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert (out / "qrels" / "test.tsv").is_file()  # the earlier collection is intact
    scored = run_cli("eval", "-t", f"ir:{out}", "-o", str(tmp_path / "r"), "--dims", "384,32")
    assert scored.returncode == 0, scored.stderr
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    scores = next(iter(results["tasks"].values()))
    assert scores["metric"] == "ndcg@10" and 50 < scores["headline"] <= 100
    assert scores["dims"]["384"] == scores["headline"] and scores["dims"]["32"] < scores["headline"]


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_training_keeps_the_best_model_by_ndcg(tiny_dirs, tmp_path, snli_ir):
    stage = Stage((Objective("mnrl", f"{SNLI_TEST}"),), dev=f"ir:{snli_ir}", batch_size=16, max_steps=6, eval_steps=3)
    Trainer(TrainConfig(model=str(tiny_dirs["bert"]), output=str(tmp_path / "m"), stages=(stage,)), False).run()
    log = [json.loads(line) for line in (tmp_path / "m" / "train_log.jsonl").read_text().splitlines()]
    evals = [e for e in log if e["event"] == "eval"]
    assert len(evals) == 2 and all(e["metric"] == "ndcg@10" and "recall@100" in e["scores"] for e in evals)
