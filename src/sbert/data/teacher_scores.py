"""Teacher scores for distillation: one score per document of each row, in one list-valued column.

The layout of sentence-transformers' and PyLate's KL-distillation tables: a query, its documents
(positive, negative_1..n, or by position), and a `label` / `scores` column holding a list with one
teacher score per document, in the documents' order. JSONL and Parquet hold real lists; a CSV or
TSV cell may spell the list as JSON (`[12.5, 3.1, 0.4]`).
"""

from __future__ import annotations

import json
import math
from typing import Any

from sbert.data.common import shown
from sbert.data.roles import Roles
from sbert.data.table_sources import Table


def teacher_column(table: Table, roles: Roles) -> str | None:
    """The score or label column when its cells are lists (a distillation table), else None.

    Any list cell makes it one, not only the first: a bare number on line 1 of a distillation table
    is then that line's one-line error, as it is on any other line, instead of turning the table
    into triplets with every teacher score dropped.
    """
    for column in (roles.score, roles.label):
        if column is None:
            continue
        if table.types.get(column, "").startswith(("list", "large_list", "fixed_size_list")):
            return column
        if any(_looks_like_list(v) for v in table.columns[column]):
            return column
    return None


def _looks_like_list(cell: Any) -> bool:
    return isinstance(cell, list | tuple) or (isinstance(cell, str) and cell.lstrip().startswith("["))


def teacher_scores(table: Table, column: str, documents: int, problems: dict[int, str]) -> list[list[float]]:
    """Each row's scores as floats; a row whose cell is not `documents` finite numbers joins `problems`."""
    out: list[list[float]] = []
    for i, cell in enumerate(table.columns[column]):
        scores = _as_list(cell)
        if scores is None or len(scores) != documents:
            problems.setdefault(i, f"column {column!r} holds {shown(cell)}, expected a list of {documents} "
                                   "teacher scores (one per document)")  # fmt: skip
            out.append([])
            continue
        out.append(scores)
    return out


def _as_list(cell: Any) -> list[float] | None:
    """The cell as finite floats, or None."""
    if isinstance(cell, str):
        try:
            cell = json.loads(cell)
        except ValueError:
            return None
    if not isinstance(cell, list | tuple):
        return None
    try:
        values = [float(v) for v in cell if not isinstance(v, bool)]
    except (TypeError, ValueError):
        return None
    return values if len(values) == len(cell) and all(math.isfinite(v) for v in values) else None
