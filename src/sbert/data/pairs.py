"""Readers for scored sentence pairs: STS benchmark, SICK, SentEval STS 2012-2016."""

from __future__ import annotations

import re
from pathlib import Path

from sbert.data.common import DataFormatError, Dataset, LineChecker, parse_float, read_lines, require


def read_stsb(path: Path, skip_bad: bool = False) -> Dataset:
    """STS benchmark csv: tab-separated, no quoting; score in column 5, sentences in 6 and 7.

    Some lines carry extra trailing columns (source tags); they are ignored. Scores 0-5 are
    scaled to [0, 1].
    """
    check = LineChecker(skip_bad)
    texts: list[tuple[str, ...]] = []
    labels: list[float] = []
    for line_no, line in read_lines(path):
        cols = line.split("\t")
        if len(cols) < 7:
            check.bad(path, line_no, f"expected at least 7 tab-separated columns, found {len(cols)}")
            continue
        score = parse_float(cols[4])
        if score is None or not 0 <= score <= 5:
            check.bad(path, line_no, f"score {cols[4]!r} is not a number in [0, 5]")
            continue
        texts.append((cols[5], cols[6]))
        labels.append(score / 5.0)
    return require(Dataset(f"stsb:{path}", "pair-score", texts, labels, skipped=check.skipped))


def read_sick(path: Path, skip_bad: bool = False) -> Dataset:
    """SICK: tab-separated with a header naming sentence_A, sentence_B, relatedness_score (1-5 -> [0, 1])."""
    check = LineChecker(skip_bad)
    lines = read_lines(path)
    header = next(lines, (1, ""))[1].split("\t")
    try:
        ia, ib, iscore = (header.index(c) for c in ("sentence_A", "sentence_B", "relatedness_score"))
    except ValueError:
        raise DataFormatError(f"{path}:1: header must name sentence_A, sentence_B, relatedness_score") from None
    texts: list[tuple[str, ...]] = []
    labels: list[float] = []
    for line_no, line in lines:
        cols = line.split("\t")
        if len(cols) <= max(ia, ib, iscore):
            check.bad(path, line_no, f"expected {len(header)} columns, found {len(cols)}")
            continue
        score = parse_float(cols[iscore])
        if score is None or not 1 <= score <= 5:
            check.bad(path, line_no, f"relatedness_score {cols[iscore]!r} is not a number in [1, 5]")
            continue
        texts.append((cols[ia], cols[ib]))
        labels.append((score - 1) / 4.0)
    return require(Dataset(f"sick:{path}", "pair-score", texts, labels, skipped=check.skipped))


def read_sts_subset(input_path: Path, gold_path: Path, skip_bad: bool = False) -> Dataset:
    """One SentEval STS subset: STS.input.<name>.txt (s1<TAB>s2) with STS.gs.<name>.txt.

    A blank gold line means "no gold score": that pair is skipped, as SentEval does.
    """
    check = LineChecker(skip_bad)
    pairs = list(read_lines(input_path))
    golds = list(read_lines(gold_path))
    if len(pairs) != len(golds):
        raise DataFormatError(f"{gold_path}: {len(golds)} lines but {input_path.name} has {len(pairs)}")
    texts: list[tuple[str, ...]] = []
    labels: list[float] = []
    for (line_no, pair), (_, gold) in zip(pairs, golds, strict=True):
        if not gold.strip():
            continue
        cols = pair.split("\t")
        score = parse_float(gold.strip())
        if len(cols) < 2:
            check.bad(input_path, line_no, "expected two tab-separated sentences")
        elif score is None or not 0 <= score <= 5:
            check.bad(gold_path, line_no, f"score {gold.strip()!r} is not a number in [0, 5]")
        else:
            texts.append((cols[0], cols[1]))
            labels.append(score / 5.0)
    return Dataset(f"sts:{input_path}", "pair-score", texts, labels, skipped=check.skipped)


def sts_subsets(directory: Path) -> dict[str, tuple[Path, Path]]:
    """Subset name -> (input file, gold file) for a SentEval STS year directory."""
    if not directory.is_dir():
        raise DataFormatError(f"{directory}: not a directory")
    found = {}
    for input_path in sorted(directory.glob("STS.input.*.txt")):
        name = re.sub(r"^STS\.input\.|\.txt$", "", input_path.name)
        gold = directory / f"STS.gs.{name}.txt"
        if not gold.is_file():
            raise DataFormatError(f"{gold}: missing gold file for {input_path.name}")
        found[name] = (input_path, gold)
    if not found:
        raise DataFormatError(f"{directory}: no STS.input.*.txt files")
    return found


def read_sts_dir(directory: Path, skip_bad: bool = False) -> Dataset:
    """All subsets of a SentEval STS year concatenated (a year's score is one Spearman over all)."""
    texts: list[tuple[str, ...]] = []
    labels: list[float] = []
    skipped = 0
    for input_path, gold_path in sts_subsets(directory).values():
        part = read_sts_subset(input_path, gold_path, skip_bad)
        texts += part.texts
        labels += part.labels or []
        skipped += part.skipped
    return require(Dataset(f"sts:{directory}", "pair-score", texts, labels, skipped=skipped))
