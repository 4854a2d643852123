"""`resolve_ids`: a batched transform that turns ID columns into the texts they name (6.2's util.resolve_ids).

IR training sets often ship as three tables: (query_id, document_ids, scores) rows, a queries table and a
documents table. `train.set_transform(resolve_ids({"query_id": queries, "document_ids": documents}))`
reads rows as (query, document_1, ..., document_N, scores), what the losses take by position; with
`output_format="lists"` a list column stays one column under a plural name (documents), the listwise
cross-encoder layout. The transform is a module-level function bound with `functools.partial`, so a
dataset carrying it pickles into DataLoader workers.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from functools import partial
from typing import Any, Literal

# sentence-transformers 6.2's label columns (its DEFAULT_LABEL_COLUMNS): passed through here, labels in training.
LABEL_COLUMNS = ("label", "labels", "score", "scores")
# One resolved input column: the lookup's values, id -> row, the single-id output name, the list output name.
Resolution = tuple[list[Any], dict[Any, int], str, str]


def resolve_ids(
    lookups: dict[str, Any],
    keep_columns: list[str] | tuple[str, ...] = LABEL_COLUMNS,
    max_list_length: int | None = None,
    output_format: Literal["columns", "lists"] = "columns",
) -> Any:
    """A batched transform resolving each `lookups` column's ids through its lookup dataset, for set_transform/map.

    A lookup is a Dataset (its id column, "id" or the one ending in "_id", and its one other column
    inferred), `(dataset, id_col)` or `(dataset, id_col, value_col)`. Input columns not in `lookups` or
    `keep_columns` are dropped; `max_list_length` keeps the first N of each list; an unknown id raises
    KeyError when its batch is read.
    """
    if isinstance(keep_columns, str):
        raise TypeError(f"keep_columns must be a list or tuple of column names, got the string {keep_columns!r}")
    if max_list_length is not None and max_list_length < 1:
        raise ValueError(f"max_list_length must be a positive integer or None, got {max_list_length}")
    if output_format not in ("columns", "lists"):
        raise ValueError(f'output_format must be "columns" or "lists", got {output_format!r}')
    resolutions = {column: _resolution(column, spec) for column, spec in lookups.items()}
    return partial(_resolve_batch, resolutions=resolutions, keep=tuple(keep_columns), limit=max_list_length,
                   output_format=output_format)  # fmt: skip


def _resolution(column: str, spec: Any) -> Resolution:
    """The lookup of one input column: its values by row and the row of each id."""
    from datasets import Dataset

    parts = list(spec) if isinstance(spec, tuple) else [spec]
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"lookups[{column!r}] must be a Dataset, (dataset, id_col) or (dataset, id_col, value_col)")
    dataset = parts[0]
    if not isinstance(dataset, Dataset):
        raise TypeError(f"lookups[{column!r}] must hold a datasets.Dataset (one split), got {type(dataset).__name__}")
    dataset = dataset.with_format(None)
    names = dataset.column_names
    id_col = parts[1] if len(parts) > 1 else _only(column, "ID", [c for c in names if c == "id" or c.endswith("_id")])
    value_col = parts[2] if len(parts) > 2 else _only(column, "value", [c for c in names if c != id_col])
    for role, name in (("ID", id_col), ("value", value_col)):
        if name not in names:
            raise ValueError(f"lookups[{column!r}]: {role} column {name!r} is not among {sorted(names)}")
    rows = {key: i for i, key in enumerate(dataset[id_col])}  # a duplicated id: its last row, as 6.2
    return dataset[value_col], rows, _output_name(column), _output_name(column, plural=True)


def _only(column: str, role: str, candidates: list[str]) -> str:
    if len(candidates) != 1:
        raise ValueError(f"lookups[{column!r}]: cannot infer the {role} column, candidates {candidates or 'none'}; "
                         "pass (dataset, id_col, value_col)")  # fmt: skip
    return candidates[0]


def _output_name(column: str, plural: bool = False) -> str:
    """query_id -> query; document_ids -> document, or documents (queries from query_ids) for a list column."""
    suffixes = {"y_ids": "ies", "_ids": "s", "_id": "", "_idx": ""} if plural else {"_ids": "", "_id": "", "_idx": ""}
    for suffix, replacement in suffixes.items():
        if column.endswith(suffix):
            return column.removesuffix(suffix) + replacement
    return column


def _resolve_batch(batch: Mapping[str, Any], resolutions: dict[str, Resolution], keep: tuple[str, ...],
                   limit: int | None, output_format: str) -> dict[str, Any]:  # fmt: skip
    """One batch of id columns as the values they name, plus the kept columns."""
    out: dict[str, Any] = {}
    for column, (values, rows, single, plural) in resolutions.items():
        ids = [ast.literal_eval(v) if isinstance(v, str) and v.lstrip().startswith("[") else v for v in batch[column]]
        if not ids or not isinstance(ids[0], list | tuple):
            _put(out, single, [values[_row(rows, i, column)] for i in ids])
            continue
        lists = [[values[_row(rows, i, column)] for i in row[:limit]] for row in ids]
        if output_format == "lists":
            _put(out, plural, lists)
            continue
        lengths = {len(row) for row in lists}
        if len(lengths) != 1:
            raise ValueError(f"input column {column!r} holds lists of lengths {sorted(lengths)}: set max_list_length "
                             'or output_format="lists"')  # fmt: skip
        for position in range(lengths.pop()):
            _put(out, f"{single}_{position + 1}", [row[position] for row in lists])
    for column in (c for c in keep if c in batch):
        kept = list(batch[column])
        _put(out, column, [v[:limit] if isinstance(v, list) else v for v in kept])
    return out


def _row(rows: dict[Any, int], key: Any, column: str) -> int:
    if key not in rows:
        raise KeyError(f"{column}: id {key!r} is not in its lookup dataset")
    return rows[key]


def _put(out: dict[str, Any], name: str, values: list[Any]) -> None:
    if name in out:
        raise ValueError(f"output column {name!r} is produced twice: rename the input columns")
    out[name] = values
