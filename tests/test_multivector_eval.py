"""A multi-vector model evaluated on a BEIR-layout folder: the same metrics as sentence-transformers 6's
MultiVectorInformationRetrievalEvaluator, through the library and through `sbert eval --task ir:DIR`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sbert.data import load_dataset
from sbert.data.beir import read_beir, write_beir
from sbert.data.beir_build import beir_from_nli
from sbert.evaluation.retrieval import evaluate_ir
from sbert.multivector import MultiVectorEncoder
from tests.cli_runner import run_cli
from tests.colbert_fixtures import build_native, build_punctuated_bert
from tests.conftest import SHARED_DATA


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny ColBERT and a BEIR folder of the first 300 SNLI test pairs."""
    if not (SHARED_DATA / "snli").is_dir():
        pytest.skip("no shared SNLI data")
    base = tmp_path_factory.mktemp("mv-eval")
    expansion = {"strategy": "fixed", "attend": False, "length": 16}
    colbert = build_native(build_punctuated_bert(base / "bert"), base / "colbert", query_length=16,
                           document_length=32, query_expansion=expansion)  # fmt: skip
    pairs = load_dataset(f"nli:{SHARED_DATA / 'snli'}:test")
    corpus, queries, rows = beir_from_nli(pairs.subset(list(range(300)), "snli"))
    write_beir(base / "ir", corpus, queries, {"test": rows})
    return colbert, base / "ir"


def test_metrics_equal_the_reference_evaluator(setup: tuple[Path, Path]) -> None:
    from sentence_transformers import MultiVectorEncoder as Reference
    from sentence_transformers.multi_vector_encoder.evaluation import MultiVectorInformationRetrievalEvaluator

    colbert, folder = setup
    collection = read_beir(folder)
    ours = evaluate_ir(MultiVectorEncoder.load(colbert, device="cpu"), collection)
    evaluator = MultiVectorInformationRetrievalEvaluator(
        dict(zip(collection.query_ids, collection.queries, strict=True)),
        dict(zip(collection.corpus_ids, collection.corpus, strict=True)),
        {q: set(docs) for q, docs in collection.qrels.items()},
        accuracy_at_k=[1, 10], precision_recall_at_k=[1, 10, 100], map_at_k=[100], write_csv=False,
    )  # fmt: skip
    theirs = evaluator(Reference(str(colbert), device="cpu"))
    prefix = next(k for k in theirs if k.endswith("ndcg@10")).removesuffix("ndcg@10")
    # Both rank the same MaxSim scores, computed apart (float sums in another order): two documents within ~1e-7
    # of each other can swap places. Once in a full suite run that moved map@100 by 1.1e-4 (a thread-count-dependent
    # order in the reference); a wrong metric moves it by far more.
    for name, value in ours.items():
        assert abs(value / 100 - theirs[prefix + name]) <= 5e-4, name
    assert 0 < ours["ndcg@10"] < 100


def test_sbert_eval_runs_a_multi_vector_model_on_retrieval_only(setup: tuple[Path, Path], tmp_path: Path) -> None:
    colbert, folder = setup
    done = run_cli("eval", "--model", str(colbert), "-t", f"ir:{folder}", "-o", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    scores = json.loads((tmp_path / "r" / "results.json").read_text())["tasks"][f"ir:{folder}"]
    assert scores["metric"] == "ndcg@10" and 0 < scores["headline"] < 100
    refused = run_cli("eval", "--model", str(colbert), "-t", f"stsb:{SHARED_DATA / 'stsbenchmark' / 'sts-dev.csv'}")
    assert refused.returncode == 2 and "ir:DIR tasks only" in refused.stderr
