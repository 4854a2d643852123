"""The guides' runnable snippets, run as written: each block marked `<!-- runs offline -->` on the line before its
fence, page by page in order, in one empty folder per page (a block may use what an earlier one of its page
wrote). The default model is the one the run install ships; nothing reaches the network. Blocks left unmarked
are sketches of an API with names the reader fills in (a model path, their own texts)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
MARK = "<!-- runs offline -->"
BLOCK = re.compile(r"^" + re.escape(MARK) + r"\n```(bash|python)\n(.*?)^```", re.M | re.S)


def marked(page: Path) -> list[tuple[str, str]]:
    """(language, code) of each marked block of `page`, in order."""
    return BLOCK.findall(page.read_text(encoding="utf-8"))


PAGES = [page for page in sorted(DOCS.glob("*.md")) if marked(page)]


def test_the_guides_have_runnable_snippets():
    assert len(PAGES) >= 5, [p.name for p in PAGES]
    text = "".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md"))
    assert text.count(MARK) == sum(len(marked(p)) for p in PAGES)  # every mark sits right above a fenced block


@pytest.mark.e2e
@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_a_guides_marked_snippets_run_as_written(page, tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "HF_HUB_OFFLINE": "1"}  # fmt: skip
    for language, code in marked(page):
        command = ["bash", "-euo", "pipefail", "-c", code] if language == "bash" else [sys.executable, "-c", code]
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{page.name} block failed:\n{code}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
