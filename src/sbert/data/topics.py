"""Scored sentence pairs with a topic: the input of cross-validated fine-tuning (paper Table 3, AFS).

One file (tab-separated, or comma-separated when it ends in .csv) with a header naming the two
sentences, the score and optionally the topic, or a folder of such files where each file's name
is its topic (the Argument Facet Similarity corpus ships one file per topic). Scores become
targets in [0, 1] by the scale or label map the spec gives, or by the detected scale (data/scores.py).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

from sbert.data.common import DataFormatError, Dataset, LineChecker, read_lines, require
from sbert.data.scores import score_map

# Header names accepted for each column (case-insensitive): the AFS release, STS-style and SICK-style names.
COLUMNS = {
    "first": ("sentence1", "sentence_1", "sentence_a", "s1", "text1"),
    "second": ("sentence2", "sentence_2", "sentence_b", "s2", "text2"),
    "score": ("score", "regression_label", "similarity", "relatedness_score", "label"),
    "topic": ("topic",),
}


def read_topic_pairs(path: Path, skip_bad: bool = False, options: dict[str, str] | None = None) -> Dataset:
    """Pairs with scores in [0, 1] and each pair's topic in `groups`."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in {".csv", ".tsv", ".txt"})
        if not files:
            raise DataFormatError(f"{path}: no .csv, .tsv or .txt files")
    elif path.is_file():
        files = [path]
    else:
        raise DataFormatError(f"{path}: no such file or folder")
    check = LineChecker(skip_bad)
    texts: list[tuple[str, ...]] = []
    labels: list[float] = []
    groups: list[str] = []
    rows = [(file, *row) for file in files for row in _rows(file, check, file.stem if path.is_dir() else None)]
    to_target = score_map([(f"{r[0]}:{r[1]}", r[2][1]) for r in rows], options or {}, str(path))
    for file, line_no, (pair, raw), topic in rows:
        target = to_target(raw)
        if target is None:
            check.bad(file, line_no, f"score {raw!r} is not a number in the scale, or not in the label map")
            continue
        texts.append(pair)
        labels.append(target)
        groups.append(topic)
    dataset = Dataset(f"topic-pairs:{path}", "pair-score", texts, labels, skipped=check.skipped, groups=tuple(groups))
    return require(dataset)


Row = tuple[int, tuple[tuple[str, str], str], str]  # line number, ((s1, s2), score text), topic


def _rows(file: Path, check: LineChecker, default_topic: str | None) -> Iterator[Row]:
    """Every data line, after checking the header."""
    delimiter = "," if file.suffix.lower() == ".csv" else "\t"
    lines = read_lines(file)
    first = next(lines, None)
    if first is None:
        raise DataFormatError(f"{file}:1: empty file; expected a header line")
    header = [h.strip().lower() for h in _split(first[1], delimiter)]
    index = {key: next((header.index(n) for n in names if n in header), None) for key, names in COLUMNS.items()}
    missing = [COLUMNS[k][0] for k in ("first", "second", "score") if index[k] is None]
    if missing or (index["topic"] is None and default_topic is None):
        need = ", ".join(missing + ([] if index["topic"] is not None or default_topic else ["topic"]))
        raise DataFormatError(f"{file}:1: the header must name {need} (known names: {COLUMNS})")
    at_a, at_b, at_score, at_topic = (index[k] for k in ("first", "second", "score", "topic"))
    assert at_a is not None and at_b is not None and at_score is not None  # checked just above
    for line_no, line in lines:
        if not line.strip():
            continue
        cols = _split(line, delimiter)
        if len(cols) != len(header):
            check.bad(file, line_no, f"expected {len(header)} columns as in the header, found {len(cols)}")
            continue
        topic = cols[at_topic] if at_topic is not None else str(default_topic)
        yield line_no, ((cols[at_a], cols[at_b]), cols[at_score]), topic


def _split(line: str, delimiter: str) -> list[str]:
    # csv handles quoted commas (AFS sentences contain them); tab files are split plainly, as the STS files are.
    return next(csv.reader(io.StringIO(line), delimiter=delimiter)) if delimiter == "," else line.split("\t")
