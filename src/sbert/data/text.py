"""Readers for plain sentences and explicit triplets."""

from __future__ import annotations

import json
from pathlib import Path

from sbert.data.common import DataFormatError, Dataset, LineChecker, read_lines, require
from sbert.data.roles import infer_roles


def read_text(path: Path, skip_bad: bool = False) -> Dataset:
    """One sentence per line (UTF-8); blank lines are skipped."""
    texts: list[tuple[str, ...]] = [(line,) for _, line in read_lines(path) if line.strip()]
    return require(Dataset(f"text:{path}", "text", texts))


def read_triplets(path: Path, skip_bad: bool = False) -> Dataset:
    """Triplets as tsv (anchor, positive, negative) or jsonl with those keys.

    jsonl rows may carry several negatives instead (`negative_1` .. `negative_k`, as
    `sbert mine-negatives --n-tuple` writes them): every row then needs the same k.
    """
    check = LineChecker(skip_bad)
    jsonl = path.suffix in {".jsonl", ".json"}
    texts: list[tuple[str, ...]] = []
    for line_no, line in read_lines(path):
        if not line.strip():
            continue
        row = _json_tuple(line) if jsonl else tuple(line.split("\t"))
        if row is None or len(row) < 3 or (not jsonl and len(row) != 3):
            what = "JSON with anchor, positive, negative (or negative_1..k)" if jsonl else "3 tab-separated columns"
            check.bad(path, line_no, f"expected {what}")
        elif texts and len(row) != len(texts[0]):
            check.bad(path, line_no, f"{len(row) - 2} negatives where the first row has {len(texts[0]) - 2}")
        else:
            texts.append(row)
    return require(Dataset(f"triplets:{path}", "triplet", texts, None, skipped=check.skipped))


def read_pairs(path: Path, skip_bad: bool = False) -> Dataset:
    """(anchor, positive) pairs: tsv with two columns, or jsonl with anchor and positive."""
    check = LineChecker(skip_bad)
    jsonl = path.suffix in {".jsonl", ".json"}
    texts: list[tuple[str, ...]] = []
    for line_no, line in read_lines(path):
        if not line.strip():
            continue
        row = _json_tuple(line, with_negatives=False) if jsonl else tuple(line.split("\t"))
        if row is None or len(row) != 2:
            check.bad(
                path, line_no, "expected JSON with anchor and positive" if jsonl else "expected 2 tab-separated columns"
            )
            continue
        texts.append(row)
    return require(Dataset(f"pairs:{path}", "pair", texts, None, skipped=check.skipped))


def _json_tuple(line: str, with_negatives: bool = True) -> tuple[str, ...] | None:
    """anchor, positive and the negatives of a JSON row, in order; None when malformed.

    The keys are named as in any table (data/roles.py: `query` / `document` as well as `anchor` /
    `positive`), so a row `jsonl:` reads is a row `triplets:` and `pairs:` read too.
    """
    try:
        row = json.loads(line)
        roles = infer_roles(list(row), [k for k, v in row.items() if isinstance(v, str)], "", "row")
        if roles.anchor is None or roles.positive is None:
            return None
        out = [row[roles.anchor], row[roles.positive]]
        if with_negatives:
            out += [row[name] for name in roles.negatives]
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError, DataFormatError):
        return None
    return tuple(out) if all(isinstance(t, str) for t in out) else None
