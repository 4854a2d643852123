"""The one pip command that installs an extra, as this install of sbert needs it said.

From a wheel it is `{install_hint('serve')}`; from a clone (an editable install, which `make`
makes) that name means nothing to pip, so the hint names the clone's folder and the interpreter
that runs sbert, whether or not its venv is activated.
"""

from __future__ import annotations

import functools
import json
import sys
from importlib import metadata
from urllib.parse import unquote, urlparse


@functools.cache
def editable_root() -> str | None:
    """The source folder of an editable install of sbert (pip's direct_url.json), else None."""
    try:
        text = metadata.distribution("sbert").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    try:
        info = json.loads(text or "{}")
    except ValueError:
        return None
    url = urlparse(str(info.get("url", "")))
    editable = bool(info.get("dir_info", {}).get("editable"))
    return unquote(url.path) if editable and url.scheme == "file" else None


def install_hint(extra: str) -> str:
    """`pip install ...` for `extra`: the package's name from an index, the clone's folder when editable."""
    root = editable_root()
    if root is None:
        return f"pip install 'sbert[{extra}]'"
    return f"{sys.executable} -m pip install -e '{root}[{extra}]'"
