"""Which column of a table plays which part: anchor, positive, negatives, score, label.

Roles come from the names people give their columns (query/question/sentence1 are anchors,
document/answer/sentence2 positives, negative and negative_1..k negatives, score/similarity a
score, label a class), or explicitly as `anchor=q,positive=doc,score=rating`. When no column name
is recognised at all, text columns are taken by position as sentence-transformers' trainer does
(first the anchor, second the positive, the rest negatives).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sbert.data.common import DataFormatError

ROLES = ("anchor", "positive", "negative", "score", "label")
# Normalised names (lower case, '-' and ' ' as '_') and the role each one plays.
_NAMES = {
    "anchor": ("anchor", "query", "question", "sentence1", "sentence_1", "sentence_a", "text1", "text_1",
               "premise", "sentence", "text", "q"),
    "positive": ("positive", "pos", "document", "doc", "passage", "sentence2", "sentence_2", "sentence_b",
                 "text2", "text_2", "answer", "hypothesis", "response"),
    "score": ("score", "scores", "similarity", "similarity_score", "relatedness", "relatedness_score", "sim"),
    "label": ("label", "labels", "gold_label", "class", "category"),
}  # fmt: skip
_NEGATIVE = re.compile(r"^(negative|neg|hard_negative|negatives)(_?\d+)?$")


@dataclass(frozen=True)
class Roles:
    """The columns behind each role; `negatives` in order, `ignored` the columns no role took."""

    anchor: str | None = None
    positive: str | None = None
    negatives: tuple[str, ...] = ()
    score: str | None = None
    label: str | None = None
    ignored: tuple[str, ...] = ()
    by_position: bool = False

    @property
    def texts(self) -> tuple[str, ...]:
        """The text columns in example order: anchor, positive, negatives."""
        return tuple(c for c in (self.anchor, self.positive, *self.negatives) if c is not None)

    def describe(self) -> str:
        """`anchor=question, positive=answer, score=rating (ignored: id)`, printed before training."""
        parts = [f"anchor={self.anchor}"] if self.anchor else []
        parts += [f"positive={self.positive}"] if self.positive else []
        parts += [f"negative={n}" for n in self.negatives]
        parts += [f"{r}={c}" for r, c in (("score", self.score), ("label", self.label)) if c]
        text = ", ".join(parts) + (" (by position)" if self.by_position else "")
        return text + (f" (ignored: {', '.join(self.ignored)})" if self.ignored else "")


def normalise(name: str) -> str:
    """A column name as compared with the known names."""
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def _role_of(name: str) -> str | None:
    key = normalise(name)
    if _NEGATIVE.match(key):
        return "negative"
    return next((role for role, names in _NAMES.items() if key in names), None)


def parse_columns(text: str, where: str) -> dict[str, list[str]]:
    """`anchor=q,positive=doc,negative=n1,negative=n2` -> {"anchor": ["q"], ...}; names the bad part."""
    explicit: dict[str, list[str]] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        role, sep, column = (s.strip() for s in part.partition("="))
        if not sep or not column or role not in ROLES:
            raise DataFormatError(f"{where}: columns {part!r}: expected ROLE=COLUMN, ROLE one of {', '.join(ROLES)}")
        if role != "negative" and role in explicit:
            raise DataFormatError(f"{where}: columns gives {role} twice")
        explicit.setdefault(role, []).append(column)
    return explicit


def infer_roles(columns: Sequence[str], text_columns: Sequence[str], explicit: str, where: str) -> Roles:
    """The roles of a table's columns: explicit ones first, the rest from their names (or positions).

    `text_columns` are those holding strings (positional inference only takes those).
    """
    given = parse_columns(explicit, where) if explicit else {}
    for names in given.values():
        for name in names:
            if name not in columns:
                raise DataFormatError(
                    f"{where}: no column {name!r} (columns: {_list(columns)}); "
                    f"--columns ROLE=COLUMN takes one of these names"
                )
    taken = {c for names in given.values() for c in names}
    found: dict[str, list[str]] = {role: list(names) for role, names in given.items()}
    for column in columns:
        role = _role_of(column)
        if column in taken or role is None or (role != "negative" and role in found):
            continue
        found.setdefault(role, []).append(column)
        taken.add(column)
    by_position = not found
    if by_position:  # sentence-transformers' convention: text columns in order
        texts = list(text_columns)
        found = {"anchor": texts[:1], "positive": texts[1:2], "negative": texts[2:]}
        taken = set(texts)
    return Roles(
        anchor=_one(found, "anchor"),
        positive=_one(found, "positive"),
        negatives=tuple(found.get("negative", [])),
        score=_one(found, "score"),
        label=_one(found, "label"),
        ignored=tuple(c for c in columns if c not in taken),
        by_position=by_position,
    )


def _one(found: dict[str, list[str]], role: str) -> str | None:
    names = found.get(role)
    return names[0] if names else None


def _list(columns: Sequence[str]) -> str:
    return ", ".join(columns) if columns else "(none)"


def missing_role(roles: Roles, needed: str, columns: Sequence[str], where: str) -> DataFormatError:
    """The one-line error for a role the objective needs and the table lacks."""
    return DataFormatError(
        f"{where}: no {needed} column (columns: {_list(columns)}; roles found: {roles.describe() or 'none'}); "
        f"name one with columns={needed}=COLUMN (--columns on the command line)"
    )
