"""sentence-transformers 6.2's small `util` helpers scripts reach for: ranks, availability checks, names, logging.

Each answers as 6.2's does; none holds a policy of sbert's own (distributed training lives in
sbert.distributed, logging set-up in the CLI, LoggingHandler in sbert.progress).
"""

from __future__ import annotations

import csv
import importlib
import importlib.util
import io
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from inspect import isclass
from pathlib import Path
from typing import Any

import torch
import tqdm

from sbert.formats.layout import atomic_file


def is_dist_initialized() -> bool:
    """Whether torch.distributed is available and initialised."""
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def get_rank() -> int:
    """This process's rank in the distributed group (0 when not distributed)."""
    return torch.distributed.get_rank() if is_dist_initialized() else 0


def get_world_size() -> int:
    """The number of processes in the distributed group (1 when not distributed)."""
    return torch.distributed.get_world_size() if is_dist_initialized() else 1


def check_package_availability(package_name: str, owner: str) -> bool:
    """Whether `package_name` is importable (6.2 also checks its owner in the package metadata)."""
    return importlib.util.find_spec(package_name) is not None


def is_accelerate_available() -> bool:
    """Whether accelerate is installed."""
    return check_package_availability("accelerate", "huggingface")


def is_datasets_available() -> bool:
    """Whether datasets is installed."""
    return check_package_availability("datasets", "huggingface")


def is_training_available() -> bool:
    """Whether the training extras 6.2 asks for (datasets and accelerate) are installed."""
    return is_accelerate_available() and is_datasets_available()


def fullname(obj: Any) -> str:
    """`module.Class` of a class or of an object's class (builtins by their bare name)."""
    cls = obj if isclass(obj) else type(obj)
    module = cls.__module__
    return cls.__name__ if module in (None, "builtins") else f"{module}.{cls.__name__}"


def import_from_string(dotted_path: str) -> Any:
    """The attribute a dotted path names (`package.module.Class`); ImportError in one line if there is none."""
    module_path, _, name = dotted_path.rpartition(".")
    if not module_path:
        raise ImportError(f"{dotted_path} doesn't look like a module path")
    module = importlib.import_module(module_path)
    try:
        return getattr(module, name)
    except AttributeError:
        raise ImportError(f'Module "{module_path}" does not define a "{name}" attribute/class') from None


@contextmanager
def disable_logging(highest_level: int = logging.CRITICAL) -> Iterator[None]:
    """Drop every log record up to `highest_level` while the block runs."""
    previous = logging.root.manager.disable
    logging.disable(highest_level)
    try:
        yield
    finally:
        logging.disable(previous)


@contextmanager
def disabled_tqdm() -> Iterator[None]:
    """Silence every tqdm progress bar created while the block runs."""
    original = tqdm.tqdm.__init__

    def quiet(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["disable"] = True
        original(self, *args, **kwargs)

    tqdm.tqdm.__init__ = quiet
    try:
        yield
    finally:
        tqdm.tqdm.__init__ = original


@contextmanager
def disable_datasets_caching() -> Iterator[None]:
    """Turn off the datasets library's on-disk cache while the block runs (restored after, if it was on)."""
    from datasets import disable_caching, enable_caching, is_caching_enabled

    was_on = is_caching_enabled()
    if was_on:
        disable_caching()
    try:
        yield
    finally:
        if was_on:
            enable_caching()


def append_to_last_row(csv_path: str | os.PathLike[str], additional_data: list[Any]) -> bool:
    """Extend a CSV file's last data row with `additional_data` (the file replaced atomically); False without one."""
    path = Path(csv_path)
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:  # a header alone: no data row to extend
        return False
    rows[-1].extend(str(v) for v in additional_data)
    out = io.StringIO(newline="")
    csv.writer(out).writerows(rows)
    with atomic_file(path) as f:
        f.write(out.getvalue().encode("utf-8"))
    return True
