"""Readers for NLI data: SentEval s1/s2/labels directories and SNLI/MultiNLI jsonl."""

from __future__ import annotations

import json
import re
from pathlib import Path

from sbert.data.common import NLI_LABELS, DataFormatError, Dataset, LineChecker, read_lines, require


def _split_spec(path: Path) -> tuple[Path, list[str]]:
    # "DIR:dev,test" names the SentEval splits to read; a bare DIR reads every split present.
    text = str(path)
    if ":" in text and Path(text.rsplit(":", 1)[0]).is_dir():
        folder, splits = text.rsplit(":", 1)
        return Path(folder), [s for s in splits.split(",") if s]
    if path.is_dir():
        return path, sorted(p.name.removeprefix("labels.") for p in path.glob("labels.*"))
    folder, _, splits = text.rpartition(":")
    if folder and not path.exists() and re.fullmatch(r"[\w,-]+", splits):  # DIR:SPLIT whose DIR is missing
        raise DataFormatError(f"{folder}: no such folder (the SNLI folder of s1/s2/labels.<split> files; "
                              f"split {splits!r})")  # fmt: skip
    return path, []


def read_nli_pairs(path: Path, skip_bad: bool = False) -> tuple[list[tuple[str, str]], list[int], int]:
    """(premise, hypothesis) pairs with label ids (entailment 0, neutral 1, contradiction 2)."""
    folder, splits = _split_spec(path)
    check = LineChecker(skip_bad)
    pairs: list[tuple[str, str]] = []
    labels: list[int] = []
    if folder.is_dir():
        if not splits:
            raise DataFormatError(f"{folder}: no labels.<split> files")
        for split in splits:
            _read_senteval_split(folder, split, check, pairs, labels)
    else:
        _read_jsonl(folder, check, pairs, labels)
    return pairs, labels, check.skipped


def _read_senteval_split(
    folder: Path, split: str, check: LineChecker, pairs: list[tuple[str, str]], labels: list[int]
) -> None:
    files = [folder / f"{name}.{split}" for name in ("s1", "s2", "labels")]
    columns = [list(read_lines(f)) for f in files]
    if len({len(c) for c in columns}) != 1:
        counts = ", ".join(f"{f.name}={len(c)}" for f, c in zip(files, columns, strict=True))
        raise DataFormatError(f"{folder}: split {split!r} files are not aligned ({counts})")
    for (line_no, s1), (_, s2), (_, label) in zip(*columns, strict=True):
        if label.strip() not in NLI_LABELS:
            check.bad(files[2], line_no, f"label {label!r} is not one of {', '.join(NLI_LABELS)}")
            continue
        pairs.append((s1, s2))
        labels.append(NLI_LABELS.index(label.strip()))


def _read_jsonl(path: Path, check: LineChecker, pairs: list[tuple[str, str]], labels: list[int]) -> None:
    for line_no, line in read_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            s1, s2, label = row["sentence1"], row["sentence2"], row["gold_label"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            check.bad(path, line_no, f"expected JSON with sentence1, sentence2, gold_label ({type(e).__name__})")
            continue
        if label == "-":  # annotators did not agree: SNLI marks these as having no gold label
            continue
        if label not in NLI_LABELS:
            check.bad(path, line_no, f"gold_label {label!r} is not one of {', '.join(NLI_LABELS)}")
            continue
        pairs.append((str(s1), str(s2)))
        labels.append(NLI_LABELS.index(label))


def read_nli(path: Path, skip_bad: bool = False) -> Dataset:
    """NLI pairs for the classification objective."""
    pairs, labels, skipped = read_nli_pairs(path, skip_bad)
    return require(Dataset(f"nli:{path}", "pair-class", list(pairs), [float(x) for x in labels], NLI_LABELS, skipped))


def read_nli_triplets(path: Path, skip_bad: bool = False) -> Dataset:
    """(premise, entailed hypothesis, contradicting hypothesis) for every such pair of one premise."""
    pairs, labels, skipped = read_nli_pairs(path, skip_bad)
    by_premise: dict[str, tuple[list[str], list[str]]] = {}
    for (premise, hypothesis), label in zip(pairs, labels, strict=True):
        entailed, contradicted = by_premise.setdefault(premise, ([], []))
        if label == 0:
            entailed.append(hypothesis)
        elif label == 2:
            contradicted.append(hypothesis)
    triplets: list[tuple[str, ...]] = [
        (premise, pos, neg)
        for premise, (pos_list, neg_list) in by_premise.items()
        for pos in pos_list
        for neg in neg_list
    ]
    return require(Dataset(f"nli-triplets:{path}", "triplet", triplets, None, skipped=skipped))
