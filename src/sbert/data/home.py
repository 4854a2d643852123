"""Where the public benchmark data lives: one folder the user controls.

`SBERT_DATA` names it; without it, `../shared/data` (beside a development checkout, or beside
the current folder) where that exists, else `~/.cache/sbert/data`. It holds the folders
`stsbenchmark/`, `snli/` and `sst2/` (see docs/evaluation.md for their layout);
`sbert data fetch stsb sst2` fills it (data/fetch.py).
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "SBERT_DATA"
# The folders the tests and `sbert reproduce` read, by the name `sbert data fetch` would take.
DATA_SETS = {"stsb": "stsbenchmark", "snli": "snli", "sst2": "sst2"}


def data_home() -> Path:
    """The data folder: $SBERT_DATA, else an existing ../shared/data, else ~/.cache/sbert/data."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    checkout = Path(__file__).resolve().parents[3]  # src/sbert/data/home.py -> the checkout's root
    for candidate in (checkout.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"):
        if candidate.is_dir():
            return candidate
    return Path.home() / ".cache" / "sbert" / "data"


DATA_VARIABLE = "$SBERT_DATA"


def expand_data_home(path: str) -> str:
    """A path that starts with `$SBERT_DATA` (a recipe's data path) with the data home in its place."""
    for prefix in (DATA_VARIABLE, "${SBERT_DATA}"):
        if path == prefix or path.startswith(prefix + "/"):
            return str(data_home()) + path[len(prefix) :]
    return path


def missing_sets(home: Path | None = None) -> list[str]:
    """The data sets (stsb, snli, sst2) whose folder the data home lacks."""
    root = data_home() if home is None else home
    return [name for name, folder in DATA_SETS.items() if not (root / folder).is_dir()]
