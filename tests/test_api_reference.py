"""The API reference (docs/reference/, built into the site by `make docs`) lists every public name of `sbert`,
`sbert.util`, the losses and the evaluators, each with a docstring, and is what tools/api_reference.py
writes from the code today (so a new export cannot be missing from it)."""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import api_reference  # noqa: E402  (tools/ is not a package)

PACKAGES = ["sbert", *api_reference.PACKAGES.values()]


def referenced() -> set[str]:
    text = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "reference").glob("*.md"))
    return set(re.findall(r"^::: (\S+)$", text, flags=re.MULTILINE))


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_has_a_docstring_in_the_reference(package):
    paths = referenced()
    for name in importlib.import_module(package).__all__:
        if name.startswith("__"):
            continue
        obj = getattr(importlib.import_module(package), name)
        assert (inspect.getdoc(obj) or "").strip(), f"{package}.{name} has no docstring"
        path = api_reference.qualified(package, name)
        assert path in paths, f"{package}.{name} is not in docs/reference (run python tools/api_reference.py)"
        module, _, attr = path.rpartition(".")
        assert getattr(importlib.import_module(module), attr) is obj  # the block documents the exported object


def test_the_committed_pages_are_what_the_generator_writes():
    for name, text in api_reference.pages().items():
        assert (ROOT / "docs" / "reference" / name).read_text(encoding="utf-8") == text, name
