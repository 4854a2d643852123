"""Retrieval collections built from labelled pairs, so retrieval can be measured without a download.

From NLI pairs (SNLI, MultiNLI; the SentEval s1/s2/labels folders or the jsonl files): every
premise with at least one entailed hypothesis is a query, every distinct hypothesis of the data is
a document, and the premise's entailed hypotheses are its relevant documents (score 1); its
neutral and contradicting hypotheses are written as judged non-relevant (score 0). From scored
pairs (STS benchmark): the first sentence of every pair scored at least `min_score` (of 5) is a
query, every distinct second sentence is a document, and the pair's second sentence is relevant.
"""

from __future__ import annotations

from collections.abc import Iterable

from sbert.data.common import NLI_LABELS, DataFormatError, Dataset

Collection = tuple[dict[str, str], dict[str, str], list[tuple[str, str, int]]]  # corpus, queries, qrels rows


def beir_from_nli(pairs: Dataset) -> Collection:
    """Queries, corpus and qrels rows from (premise, hypothesis) pairs labelled entailment/neutral/contradiction."""
    if pairs.kind != "pair-class" or pairs.labels is None or tuple(pairs.label_names) != NLI_LABELS:
        raise DataFormatError(f"{pairs.name}: needs NLI pairs labelled {', '.join(NLI_LABELS)}")
    entailment = NLI_LABELS.index("entailment")
    corpus = _ids((h for _, h in pairs.texts), "d")
    premises = [p for (p, _), y in zip(pairs.texts, pairs.labels, strict=True) if y == entailment]
    queries = _ids(premises, "q")
    rows = {
        (queries[p], corpus[h]): int(y == entailment)
        for (p, h), y in zip(pairs.texts, pairs.labels, strict=True)
        if p in queries
    }
    return _invert(corpus), _invert(queries), [(q, d, s) for (q, d), s in rows.items()]


def beir_from_scored_pairs(pairs: Dataset, min_score: float = 4.0) -> Collection:
    """Queries, corpus and qrels rows from STS pairs: a pair scored >= min_score (of 5) is a relevant hit."""
    if pairs.kind != "pair-score" or pairs.labels is None:
        raise DataFormatError(f"{pairs.name}: needs scored sentence pairs (stsb:, sick:, sts:)")
    corpus = _ids((b for _, b in pairs.texts), "d")
    kept = [(a, b) for (a, b), y in zip(pairs.texts, pairs.labels, strict=True) if 5 * y >= min_score]
    if not kept:
        raise DataFormatError(f"{pairs.name}: no pair scores {min_score} or more")
    queries = _ids((a for a, _ in kept), "q")
    rows = dict.fromkeys((queries[a], corpus[b]) for a, b in kept)
    return _invert(corpus), _invert(queries), [(q, d, 1) for q, d in rows]


def _ids(texts: Iterable[str], prefix: str) -> dict[str, str]:
    """Text -> id (prefix + first-seen position), one id per distinct text."""
    out: dict[str, str] = {}
    for text in texts:
        out.setdefault(text, f"{prefix}{len(out)}")
    return out


def _invert(ids: dict[str, str]) -> dict[str, str]:
    return {key: text for text, key in ids.items()}
