"""Retrieval collections in the BEIR layout, read as they ship, and written the same way.

A folder holds `corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl` (`_id`, `text`) and
`qrels/<split>.tsv` (a header, then `query-id<TAB>corpus-id<TAB>score`). Scores are graded
relevance; a document is relevant to a query when its score is above 0 (BEIR writes judged
non-relevant documents with 0). A spec names the split after the folder: `ir:DIR` (test) or
`ir:DIR:dev`.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from sbert.data.common import DataFormatError, read_lines
from sbert.formats.layout import atomic_directory

log = logging.getLogger(__name__)

CORPUS_FILE, QUERIES_FILE, QRELS_DIR = "corpus.jsonl", "queries.jsonl", "qrels"
QRELS_HEADER = "query-id\tcorpus-id\tscore"


@dataclass(frozen=True)
class IRCollection:
    """Queries, a corpus and graded judgements; only queries with a relevant document are kept."""

    name: str
    corpus_ids: list[str]
    corpus: list[str]  # title and text joined, as sentence-transformers and BEIR embed them
    query_ids: list[str]
    queries: list[str]
    qrels: dict[str, dict[str, int]]  # query id -> {corpus id: grade > 0}
    unknown_ids: int = 0  # qrels rows naming a query or document the collection lacks

    def __len__(self) -> int:
        return len(self.query_ids)


def split_ir_spec(path: str) -> tuple[Path, str]:
    """`DIR` -> (DIR, "test"); `DIR:dev` -> (DIR, "dev") when DIR is a folder."""
    folder, sep, split = path.rpartition(":")
    if sep and Path(folder).expanduser().is_dir() and split:
        return Path(folder).expanduser(), split
    return Path(path).expanduser(), "test"


def read_beir(folder: Path, split: str = "test", strict: bool = False) -> IRCollection:
    """Read a BEIR folder; qrels naming unknown ids are counted and said once (an error with `strict`)."""
    if not folder.is_dir():
        raise DataFormatError(f"{folder}: no such folder (a BEIR collection: corpus.jsonl, queries.jsonl, qrels/)")
    corpus = _read_jsonl(folder / CORPUS_FILE, with_title=True)
    queries = _read_jsonl(folder / QUERIES_FILE, with_title=False)
    qrels_path = folder / QRELS_DIR / f"{split}.tsv"
    judged, unknown, first = _read_qrels(qrels_path, queries, corpus)
    if unknown:
        message = f"{qrels_path}: {unknown} judgement(s) name a query or document the collection lacks (first: {first})"
        if strict:
            raise DataFormatError(message)
        log.warning("%s; they are ignored", message)
    kept = [q for q in queries if judged.get(q)]
    if not kept:
        raise DataFormatError(f"{qrels_path}: no query has a relevant document (score > 0)")
    return IRCollection(
        f"{folder.name}:{split}", list(corpus), list(corpus.values()), kept, [queries[q] for q in kept],
        {q: judged[q] for q in kept}, unknown,
    )  # fmt: skip


def _read_jsonl(path: Path, with_title: bool) -> dict[str, str]:
    """`_id` -> text (with its title in front, for the corpus) of every line."""
    out: dict[str, str] = {}
    for line_no, line in read_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            key, text = str(row["_id"]), row["text"]
            title = row.get("title") or "" if with_title else ""
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as e:
            raise DataFormatError(f"{path}:{line_no}: expected a JSON object with _id and text ({e})") from None
        if not isinstance(text, str) or not isinstance(title, str):
            raise DataFormatError(f"{path}:{line_no}: text and title must be strings")
        if key in out:
            raise DataFormatError(f"{path}:{line_no}: duplicate _id {key!r}")
        out[key] = f"{title} {text}".strip()
    if not out:
        raise DataFormatError(f"{path}: no entries")
    return out


def _read_qrels(
    path: Path, queries: dict[str, str], corpus: dict[str, str]
) -> tuple[dict[str, dict[str, int]], int, str]:
    """Relevant documents per query, the count of rows naming unknown ids, and the first of them.

    A later row for the same (query, document) replaces an earlier one, as BEIR's loader keeps the
    last: a later score of 0 makes the document not relevant.
    """
    grades: dict[str, dict[str, int]] = {}
    unknown, first = 0, ""
    for line_no, line in read_lines(path):
        fields = line.split("\t")
        if line_no == 1 and fields[0].strip().lower() in ("query-id", "query_id", "qid"):
            continue  # the header
        if not line.strip():
            continue
        if len(fields) < 3:
            raise DataFormatError(f"{path}:{line_no}: expected query-id<TAB>corpus-id<TAB>integer score")
        query, doc, grade = fields[0].strip(), fields[1].strip(), _grade(path, line_no, fields[2])
        if query not in queries or doc not in corpus:
            unknown += 1
            first = first or f"line {line_no}: {query!r} -> {doc!r}"
            continue
        grades.setdefault(query, {})[doc] = grade
    judged = {q: {d: g for d, g in docs.items() if g > 0} for q, docs in grades.items()}
    return {q: docs for q, docs in judged.items() if docs}, unknown, first


def _grade(path: Path, line_no: int, text: str) -> int:
    """An integer score; one line naming the file, the line and the value otherwise ("²" passes isdigit)."""
    value = text.strip()
    if not re.fullmatch(r"-?[0-9]+", value):
        raise DataFormatError(f"{path}:{line_no}: score {value!r} is not an integer (query-id<TAB>corpus-id<TAB>score)")
    return int(value)


def write_beir(
    folder: Path,
    corpus: dict[str, str],
    queries: dict[str, str],
    qrels: dict[str, list[tuple[str, str, int]]],
) -> None:
    """Write a BEIR folder atomically: `qrels` maps a split name to (query id, corpus id, score) rows."""
    with atomic_directory(folder) as tmp:
        with (tmp / CORPUS_FILE).open("w", encoding="utf-8") as f:
            f.writelines(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in corpus.items())
        with (tmp / QUERIES_FILE).open("w", encoding="utf-8") as f:
            f.writelines(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items())
        (tmp / QRELS_DIR).mkdir()
        for split, rows in qrels.items():
            lines = [QRELS_HEADER, *(f"{q}\t{d}\t{s}" for q, d, s in rows)]
            (tmp / QRELS_DIR / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
