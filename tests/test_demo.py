"""The demo corpus is built from paraphrase pairs on adjacent lines: the default model must find them."""

import pytest

from sbert import SentenceEncoder
from sbert.demo import DEMO_QUERIES, demo_corpus, run_demo


@pytest.fixture(scope="module")
def result():
    return run_demo(SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu"))


def test_corpus_is_about_sixty_sentences_on_several_topics():
    assert 50 <= len(demo_corpus()) <= 70


def test_top_pairs_are_the_written_paraphrases(result):
    assert len(result.pairs) == 5
    for _score, i, j in result.pairs:
        assert j == i + 1, (result.sentences[i], result.sentences[j])
    scores = [s for s, _, _ in result.pairs]
    assert scores == sorted(scores, reverse=True)


def test_queries_find_their_topic(result):
    bread, weather, space = (result.hits[q] for q in DEMO_QUERIES)
    assert all("bread" in result.sentences[i] for _, i in bread[:2])
    assert "rain" in result.sentences[weather[0][1]]
    assert "Mars" in result.sentences[space[0][1]]
