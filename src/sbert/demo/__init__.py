"""The demo behind `make run`: encode a small shipped corpus, mine pairs, answer queries."""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from sbert.search import paraphrase_mining, semantic_search

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder

DEMO_QUERIES = (
    "How do I make bread at home?",
    "Will it be stormy this weekend?",
    "exploring other planets",
)


@dataclass(frozen=True)
class DemoResult:
    """What the demo found, for printing or checking."""

    sentences: list[str]
    pairs: list[tuple[float, int, int]]
    hits: dict[str, list[tuple[float, int]]]
    encode_seconds: float


def demo_corpus() -> list[str]:
    """The sentences the package ships for the demo (one per line)."""
    text = resources.files("sbert.demo").joinpath("corpus.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


def run_demo(model: SentenceEncoder, queries: tuple[str, ...] = DEMO_QUERIES, pairs: int = 5, k: int = 3) -> DemoResult:
    """Encode the corpus, mine the top pairs and search each query."""
    sentences = demo_corpus()
    start = time.perf_counter()
    corpus_emb = model.encode(sentences, normalize=True)
    query_emb = model.encode(list(queries), normalize=True)
    seconds = time.perf_counter() - start
    mined = paraphrase_mining(corpus_emb, max_pairs=pairs)
    scores, idx = semantic_search(query_emb, corpus_emb, top_k=k)
    hits = {q: [(float(s), int(i)) for s, i in zip(scores[n], idx[n], strict=True)] for n, q in enumerate(queries)}
    return DemoResult(sentences, mined, hits, seconds)


def format_demo(result: DemoResult) -> str:
    """Human-readable report of a demo run."""
    s = result.sentences
    lines = [f"Encoded {len(s)} sentences in {result.encode_seconds:.2f} s", "", "Most similar pairs:"]
    lines += [f"  {score:.3f}  {s[i]!r}  <->  {s[j]!r}" for score, i, j in result.pairs]
    for query, hits in result.hits.items():
        lines += ["", f"Query: {query!r}"]
        lines += [f"  {score:.3f}  {s[i]}" for score, i in hits]
    return "\n".join(lines)
