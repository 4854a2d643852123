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
    # Every sbert distribution on the path, not the first: a clone's src/sbert.egg-info (no direct_url.json)
    # comes first when src/ is ahead of site-packages on sys.path.
    for dist in metadata.distributions(name="sbert"):
        try:
            info = json.loads(dist.read_text("direct_url.json") or "{}")
        except ValueError:
            continue
        url = urlparse(str(info.get("url", "")))
        if info.get("dir_info", {}).get("editable") and url.scheme == "file":
            return unquote(url.path)
    return None


def install_hint(extra: str) -> str:
    """`pip install ...` for `extra`: the package's name from an index, the clone's folder when editable."""
    root = editable_root()
    if root is None:
        return f"pip install 'sbert[{extra}]'"
    return f"{sys.executable} -m pip install -e '{root}[{extra}]'"
