"""Write the API reference pages (docs/reference/) from the code: `python tools/api_reference.py`.

Every name `sbert` exports gets a mkdocstrings block at its defining module (the package loads most of
them lazily, so the static reader would not see them under `sbert.`), then `sbert.util`, the losses, the
evaluators, and each CLI command's `--help` as the parser prints it. `make docs` runs this before
`mkdocs build --strict`; tests/test_api_reference.py checks the committed pages are what this writes.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "reference"
# The packages whose public names (their __all__) get a page of their own after sbert's top level.
PACKAGES = {"util": "sbert.util", "losses": "sbert.losses", "evaluation": "sbert.evaluation"}
OPTIONS = "    options:\n      show_root_heading: true\n      show_source: false\n      members_order: source\n"


def qualified(package: str, name: str) -> str:
    """`module.name` where `name`, exported by `package`, is defined (its own module for classes and functions)."""
    obj = getattr(importlib.import_module(package), name)
    module = getattr(obj, "__module__", None)
    if module and hasattr(importlib.import_module(module), name):
        return f"{module}.{name}"
    return f"{package}.{name}"


def api_page(title: str, package: str, intro: str) -> str:
    """One reference page: a mkdocstrings block per public name of `package`, in __all__'s order."""
    names = [n for n in importlib.import_module(package).__all__ if not n.startswith("__")]
    blocks = [f"::: {qualified(package, name)}\n{OPTIONS}" for name in names]
    return f"# {title}\n\n{intro}\n\n" + "\n".join(blocks)


def cli_page() -> str:
    """Each command's `--help`, as `sbert COMMAND --help` prints it."""
    from sbert.cli.main import build_parser

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal's width: the same page on every machine
    parser = build_parser()
    parts = ["# Command line\n\nEvery command's `--help`, as the parser prints it (`sbert COMMAND --help`).\n",
             "```text\n" + parser.format_help() + "```\n"]  # fmt: skip
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sub in commands.choices.items():  # type: ignore[attr-defined]
        parts.append(f"## `sbert {name}`\n\n```text\n{sub.format_help()}```\n")
    return "\n".join(parts)


PAGES = {
    "index.md": lambda: api_page(
        "Python API",
        "sbert",
        "Everything `import sbert` exports: the native classes, the "
        "sentence-transformers drop-in classes and their trainers, and the helpers.",
    ),
    "util.md": lambda: api_page(
        "sbert.util", "sbert.util", "sentence-transformers' `util` helpers: similarity, search, mining, quantization."
    ),
    "losses.md": lambda: api_page(
        "Losses", "sbert.losses", "The training objectives, by sentence-transformers' names where it has one."
    ),
    "evaluation.md": lambda: api_page(
        "Evaluators", "sbert.evaluation", "The evaluators, as sentence-transformers names them."
    ),
    "cli.md": cli_page,
}


def pages() -> dict[str, str]:
    """File name -> text of every reference page, as this script writes them."""
    with contextlib.redirect_stderr(io.StringIO()):
        return {name: make() for name, make in PAGES.items()}


def main() -> None:
    """Write every page under docs/reference/."""
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in pages().items():
        (OUT / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(PAGES)} pages to {OUT.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
