"""Retrieve, then rerank: semantic_search, the IR evaluator and `sbert search`/`sbert eval` with a cross-encoder."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.cli.main import main
from sbert.data import load_dataset
from sbert.data.beir import read_beir, write_beir
from sbert.data.beir_build import beir_from_nli
from sbert.evaluation.retrieval import evaluate_ir, ranked_ids, rerank_hits, search
from sbert.reranker.model import CrossEncoder
from sbert.search import semantic_search
from tests.conftest import SHARED_DATA
from tests.tiny_models import save_tiny_reranker


@pytest.fixture(scope="module")
def reranker_dir(tiny_dirs, tmp_path_factory):
    """A cross-encoder (random head on the tiny BERT): an arbitrary but fixed order, all these tests need."""
    path = tmp_path_factory.mktemp("ce") / "reranker"
    return save_tiny_reranker(tiny_dirs["bert"], path)


@pytest.fixture(scope="module")
def snli_small(tmp_path_factory):
    pairs = load_dataset(f"nli:{SHARED_DATA / 'snli'}:test")
    folder = tmp_path_factory.mktemp("ir") / "snli"
    corpus, queries, rows = beir_from_nli(pairs.subset(list(range(300)), "snli"))
    write_beir(folder, corpus, queries, {"test": rows})
    return folder


def test_semantic_search_reranks_the_cosine_top(reranker_dir, tiny_dirs):
    reranker = CrossEncoder.load(reranker_dir)
    texts = [f"sentence number {i} about {w}" for i, w in enumerate(["cats", "dogs", "rain", "music"] * 10)]
    queries = ["cats and dogs", "music in the rain"]
    encoder = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    q, c = encoder.encode(queries), encoder.encode(texts)
    scores, rows = semantic_search(q, c, top_k=3, reranker=reranker, rerank_top=10, query_texts=queries,
                                   corpus_texts=texts)  # fmt: skip
    _, candidates = semantic_search(q, c, top_k=10)
    for i, query in enumerate(queries):
        predicted = reranker.predict([(query, texts[j]) for j in candidates[i]])
        expected = dict(zip(candidates[i].tolist(), predicted, strict=True))
        # The three best of the cosine top 10 by the reranker's score (ties may come in either order:
        # batches differ between the two calls, so do the last bits of equal scores).
        np.testing.assert_allclose(scores[i], sorted(expected.values(), reverse=True)[:3], atol=1e-5)
        np.testing.assert_allclose(scores[i], [expected[r] for r in rows[i].tolist()], atol=1e-5)
        assert np.all(np.diff(scores[i]) <= 0)
    with pytest.raises(ValueError, match="rerank_top must be an integer >= top_k"):
        semantic_search(q, c, top_k=5, reranker=reranker, rerank_top=4, query_texts=queries, corpus_texts=texts)
    with pytest.raises(ValueError, match="pass query_texts and corpus_texts"):
        semantic_search(q, c, top_k=3, reranker=reranker)
    with pytest.raises(ValueError, match="must match"):
        semantic_search(q, c, top_k=3, reranker=reranker, query_texts=queries, corpus_texts=texts[:5])


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_ir_evaluator_scores_the_reranked_order(reranker_dir, snli_small):
    encoder = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    reranker = CrossEncoder.load(reranker_dir)
    collection = read_beir(snli_small)
    alone = evaluate_ir(encoder, collection)
    reranked = evaluate_ir(encoder, collection, reranker=reranker, rerank_top=20)
    # Recall@100 only sees the set of the top 100, which reranking the top 20 cannot change.
    assert reranked["recall@100"] == pytest.approx(alone["recall@100"])
    assert reranked["ndcg@10"] != pytest.approx(alone["ndcg@10"])  # a random head reorders: the test can fail
    q = encoder.encode(collection.queries)
    scores, rows = search(q, [encoder.encode(collection.corpus)])
    hits = ranked_ids(scores, rows, collection.corpus_ids)
    text = dict(zip(collection.corpus_ids, collection.corpus, strict=True))
    reordered = rerank_hits(reranker, collection, hits, 20, None)
    spreads = []
    for query, before, after in zip(collection.queries, hits, reordered, strict=True):
        assert after[20:] == before[20:] and sorted(after[:20]) == sorted(before[:20])
        # Scored again in another batch: best first, up to the last bits of near-equal scores.
        along = reranker.predict([(query, text[d]) for d in after[:20]])
        assert np.all(np.diff(along) <= 1e-5)
        spreads.append(np.ptp(along))
    # The order check means something only where scores differ by far more than its tolerance (a
    # random head spreads them by ~1e-3, and by how much shifts with the CPU's rounding).
    assert np.median(spreads) > 1e-4


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_cli_search_and_eval_with_a_reranker(reranker_dir, tiny_dirs, snli_small, tmp_path, capsys):
    model_dir = tmp_path / "model"
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(model_dir)
    corpus = tmp_path / "corpus.txt"
    lines = [f"line {i} on {w}" for i, w in enumerate(["cats", "dogs", "rain", "music", "trains"] * 4)]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["index", "build", str(corpus), "--out", str(tmp_path / "idx"), "--model", str(model_dir)]) == 0
    capsys.readouterr()
    search_args = ["search", str(tmp_path / "idx"), "cats on trains", "-k", "3", "--json"]
    assert main([*search_args, "--rerank", str(reranker_dir), "--rerank-top", "8"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert main([*search_args[:4], "8", "--json"]) == 0
    top8 = [h["text"] for h in json.loads(capsys.readouterr().out)["hits"]]
    expected = CrossEncoder.load(reranker_dir).rank("cats on trains", top8, top_k=3, return_documents=True)
    assert [h["text"] for h in hits] == [e["text"] for e in expected]
    assert [h["score"] for h in hits] == pytest.approx([e["score"] for e in expected])
    assert main([*search_args, "--rerank", str(reranker_dir), "--rerank-top", "2"]) == 2
    assert "--rerank-top (2) must be >= --top-k (3)" in capsys.readouterr().err
    assert main([*search_args, "--rerank", str(model_dir)]) == 2
    assert "not a cross-encoder" in capsys.readouterr().err
    out = tmp_path / "r"
    assert main(["eval", "-t", f"ir:{snli_small}", "--reranker", str(reranker_dir), "--rerank-top", "10", "-o",
                 str(out)]) == 0  # fmt: skip
    record = json.loads((out / "results.json").read_text())
    assert record["reranker"] == str(reranker_dir) and record["rerank_top"] == 10
    assert main(["eval", "-t", f"stsb:{SHARED_DATA / 'stsbenchmark' / 'sts-dev.csv'}", "--reranker",
                 str(reranker_dir)]) == 2  # fmt: skip
    assert "add an ir:DIR task" in capsys.readouterr().err
