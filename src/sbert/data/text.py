"""Readers for plain sentences and explicit triplets."""

from __future__ import annotations

import json
from pathlib import Path

from sbert.data.common import Dataset, LineChecker, read_lines, require

_TRIPLET_KEYS = ("anchor", "positive", "negative")


def read_text(path: Path, skip_bad: bool = False) -> Dataset:
    """One sentence per line (UTF-8); blank lines are skipped."""
    texts: list[tuple[str, ...]] = [(line,) for _, line in read_lines(path) if line.strip()]
    return require(Dataset(f"text:{path}", "text", texts))


def read_triplets(path: Path, skip_bad: bool = False) -> Dataset:
    """Triplets as tsv (anchor, positive, negative) or jsonl with those three keys."""
    check = LineChecker(skip_bad)
    jsonl = path.suffix in {".jsonl", ".json"}
    texts: list[tuple[str, ...]] = []
    for line_no, line in read_lines(path):
        if not line.strip():
            continue
        if jsonl:
            try:
                row = json.loads(line)
                texts.append(tuple(str(row[k]) for k in _TRIPLET_KEYS))
            except (json.JSONDecodeError, KeyError, TypeError):
                check.bad(path, line_no, "expected JSON with anchor, positive, negative")
            continue
        cols = line.split("\t")
        if len(cols) != 3:
            check.bad(path, line_no, f"expected 3 tab-separated columns, found {len(cols)}")
            continue
        texts.append(tuple(cols))
    return require(Dataset(f"triplets:{path}", "triplet", texts, None, skipped=check.skipped))
