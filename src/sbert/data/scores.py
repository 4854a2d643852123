"""How a file's similarity labels become targets in [0, 1]: a numeric scale, or a map of categories.

Given as options of the data spec: `topic-pairs[scale=0-1]:FILE`, `topic-pairs[scale=1-5]:FILE`
or `topic-pairs[labels=HS:1,SS:0.67,NS:0.33,DTORCD:0]:FILE` (the UKP aspect corpus's categories).
Without one, numeric scores whose largest value is at most 1 are read on a 0-1 scale (BWS
scores) and others on 0-5 (STS, AFS), and the choice is logged; category labels need a map.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from sbert.data.common import DataFormatError, parse_float

log = logging.getLogger(__name__)
ScoreMap = Callable[[str], float | None]  # raw label -> target in [0, 1], None when it cannot be read


def parse_options(text: str, spec: str, known: tuple[str, ...] = ("scale", "labels")) -> dict[str, str]:
    """`key=value;key=value` from inside a spec's brackets; keys outside `known` are refused."""
    options = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        key, sep, value = part.partition("=")
        if not sep or not value:
            raise DataFormatError(f"{spec!r}: option {part!r} is not key=value")
        options[key.strip()] = value.strip()
    unknown = set(options) - set(known)
    if unknown:
        raise DataFormatError(f"{spec!r}: unknown option {sorted(unknown)[0]!r}; known: {', '.join(known)}")
    return options


def label_map(text: str) -> dict[str, float]:
    """`HS:1,SS:0.67` -> {"HS": 1.0, "SS": 0.67}; every target must lie in [0, 1]."""
    mapping = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = pair.rpartition(":")
        target = parse_float(value)
        if not sep or not name or target is None or not 0 <= target <= 1:
            raise DataFormatError(f"labels={text!r}: {pair!r} is not LABEL:target with a target in [0, 1]")
        mapping[name.strip()] = target
    return mapping


def scale_bounds(text: str) -> tuple[float, float]:
    """`0-5` -> (0.0, 5.0)."""
    low, sep, high = text.partition("-")
    lo, hi = parse_float(low), parse_float(high)
    if not sep or lo is None or hi is None or hi <= lo:
        raise DataFormatError(f"scale={text!r}: expected LOW-HIGH, e.g. 0-5 or 0-1")
    return lo, hi


def score_map(raw: Sequence[tuple[str, str]], options: dict[str, str], where: str) -> ScoreMap:
    """The mapping for raw labels ((file:line, label) pairs), from the options or else from the labels."""
    if "labels" in options:
        mapping = label_map(options["labels"])
        return lambda label: mapping.get(label.strip())
    if "scale" in options:
        lo, hi = scale_bounds(options["scale"])
    else:
        lo, hi = _detect(raw, where)

    def scaled(label: str) -> float | None:
        value = parse_float(label)
        return None if value is None or not lo <= value <= hi else (value - lo) / (hi - lo)

    return scaled


def _detect(raw: Sequence[tuple[str, str]], where: str) -> tuple[float, float]:
    values = [parse_float(label) for _, label in raw]
    bad = next((r for r, v in zip(raw, values, strict=True) if v is None), None)
    if bad is not None:
        raise DataFormatError(
            f"{bad[0]}: score {bad[1]!r} is not a number; for category labels give a map, "
            "e.g. topic-pairs[labels=HS:1,SS:0.67,NS:0.33,DTORCD:0]:PATH"
        )
    largest = max((v for v in values if v is not None), default=0.0)
    if largest <= 1:
        log.warning("%s: every score is in [0, 1]: read on a 0-1 scale (give [scale=0-5] if not)", where)
        return 0.0, 1.0
    log.info("%s: scores read on a 0-5 scale (largest %g; give [scale=LOW-HIGH] otherwise)", where, largest)
    return 0.0, 5.0
