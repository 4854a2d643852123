"""The on-disk layout of a saved model (sentence-transformers compatible) and atomic writes."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

from sbert.errors import ModelFormatError

MODULES_FILE = "modules.json"
MODEL_CONFIG_FILE = "config_sentence_transformers.json"
ROUTER_CONFIG_FILE = "router_config.json"
# Modules that only sentence-transformers' SparseEncoder chains hold: such a folder is a sparse model.
SPARSE_MODULES = frozenset({"SpladePooling", "SparseStaticEmbedding", "SparseAutoEncoder", "MLMTransformer"})
TRANSFORMER_CONFIG_FILE = "sentence_bert_config.json"


@dataclass(frozen=True)
class ModuleEntry:
    """One row of modules.json: where a module lives and which class reads it."""

    idx: int
    name: str
    path: str
    type: str

    @property
    def class_name(self) -> str:
        """The class part of `type` (`...modules.Pooling` -> `Pooling`), however the library spelled the module path."""
        return self.type.rsplit(".", 1)[-1]


def read_json(path: Path) -> Any:
    """Read a JSON file, turning a parse error into a one-line error naming the file and line."""
    try:
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise ModelFormatError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None


def write_json(path: Path, data: Any) -> None:
    """Write JSON with a trailing newline (files land inside an atomic directory)."""
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON through a temp file and a rename: readers see the old or the new file, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as f:
        f.write((json.dumps(data, indent=2) + "\n").encode())


def read_modules(root: Path) -> list[ModuleEntry]:
    """Parse modules.json into entries, validating the fields every loader relies on."""
    path = root / MODULES_FILE
    rows = read_json(path)
    if not isinstance(rows, list):
        raise ModelFormatError(f"{path}: expected a JSON list of modules")
    entries = []
    for i, row in enumerate(rows):
        try:
            entries.append(ModuleEntry(idx=int(row["idx"]), name=str(row["name"]), path=row["path"], type=row["type"]))
        except (KeyError, TypeError, ValueError):
            raise ModelFormatError(f"{path}: module {i} lacks idx/name/path/type") from None
    return sorted(entries, key=lambda e: e.idx)


def write_modules(root: Path, entries: list[ModuleEntry]) -> None:
    """Write modules.json."""
    write_json(root / MODULES_FILE, [asdict(e) for e in entries])


def architectures(folder: Path) -> list[str]:
    """The model classes a Hugging Face folder's config.json names ([] when it names none)."""
    config = folder / "config.json"
    found = read_json(config).get("architectures") if config.is_file() else None
    return [str(a) for a in found or []]


@dataclass(frozen=True)
class RouterConfig:
    """router_config.json: module id -> class, route -> module ids in order, and the Router's parameters."""

    types: dict[str, str]
    structure: dict[str, list[str]]
    parameters: dict[str, Any]
    path: Path  # the file it was read from, for one-line errors

    def type_names(self, route: str) -> list[str]:
        """The class names (`...SpladePooling` -> `SpladePooling`) of a route's modules, in order."""
        return [self.types.get(m, "").rsplit(".", 1)[-1] for m in self.structure.get(route, [])]


def read_router_config(folder: Path) -> RouterConfig:
    """The one reader of router_config.json (config.json in old Asym folders, as sentence-transformers reads it).

    Module ids are checked to stay inside the folder.
    """
    path = folder / ROUTER_CONFIG_FILE
    if not path.is_file():
        path = folder / "config.json"
    config = read_json(path)
    try:
        types = {str(k): str(v) for k, v in dict(config["types"]).items()}
        structure = {str(k): [str(m) for m in v] for k, v in dict(config["structure"]).items()}
        parameters = dict(config.get("parameters", {}))
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ModelFormatError(f"{path}: expected 'types', 'structure' and 'parameters'") from None
    for module_id in types:
        if Path(module_id).is_absolute() or ".." in Path(module_id).parts:
            raise ModelFormatError(f"{path}: module id {module_id!r} leaves the model folder")
    return RouterConfig(types, structure, parameters, path)


def write_router_config(
    folder: Path, types: dict[str, str], structure: dict[str, list[str]], parameters: dict[str, Any]
) -> None:
    """Write router_config.json as sentence-transformers lays it out."""
    write_json(folder / ROUTER_CONFIG_FILE, {"types": types, "structure": structure, "parameters": parameters})


def _umask() -> int:
    # Read by setting and restoring it: the only portable way to learn the umask.
    current = os.umask(0)
    os.umask(current)
    return current


# mkstemp and mkdtemp create 0600 / 0700 entries; published results follow the umask like any file.
_FILE_MODE = 0o666 & ~_umask()
_DIR_MODE = 0o777 & ~_umask()


@contextmanager
def atomic_directory(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary sibling directory that replaces `target` only if the block succeeds.

    A crash or kill while writing leaves the previous `target` untouched; the swap itself is
    two renames, so at every instant either the old or the new directory is at `target` (or,
    between the two renames, at `target`'s backup name).
    """
    target = Path(target).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield tmp
        _fsync_tree(tmp)
        tmp.chmod(_DIR_MODE)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    backup = target.with_name(f".{target.name}.old-{os.getpid()}")
    if target.exists():
        os.replace(target, backup)
    os.replace(tmp, target)
    shutil.rmtree(backup, ignore_errors=True)


@contextmanager
def atomic_file(target: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """Yield a binary temp file beside `target` that replaces it only if the block succeeds."""
    target = Path(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _fsync_tree(root: Path) -> None:
    # Data must be on disk before the rename publishes it, or a power cut could
    # leave a renamed directory with empty files.
    for path in root.rglob("*"):
        if path.is_file():
            with path.open("rb") as f:
                os.fsync(f.fileno())
