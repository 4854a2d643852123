"""The README's quick starts, run as written: every bash and python block in order, in one empty folder.

`make` and `pip install` lines are left out (this venv has what they install), a block that ends in
`&` starts in the background (the server) and the next block waits for its /health, and port 8000
becomes a free port. The default model is the one the run install ships.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.serve_helpers import free_port

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```", re.M | re.S)


def blocks() -> list[tuple[str, str]]:
    """(language, code) of each fenced block, the set-up lines dropped."""
    found = []
    for language, code in BLOCK.findall(README.read_text(encoding="utf-8")):
        kept = [line for line in code.splitlines() if not line.startswith(("make ", "pip install "))]
        if any(line.strip() for line in kept):
            found.append((language, "\n".join(kept) + "\n"))
    return found


@pytest.mark.e2e
def test_the_readme_quick_starts_run_as_written(tmp_path):
    port = str(free_port())
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    background: list[subprocess.Popen] = []
    try:
        for language, code in blocks():
            code = code.replace("8000", port)
            if code.rstrip().endswith("&"):  # the server: started here, waited for below
                background.append(subprocess.Popen(["bash", "-c", code.rstrip().rstrip("&")], cwd=tmp_path, env=env,
                                                   start_new_session=True))  # fmt: skip
                wait_for(f"http://127.0.0.1:{port}/health", background[-1])
                continue
            command = ["bash", "-euo", "pipefail", "-c", code] if language == "bash" else [sys.executable, "-c", code]
            done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, f"README block failed:\n{code}\n{done.stdout}\n{done.stderr}"
    finally:
        for process in background:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)
    assert (tmp_path / "emb.npy").is_file() and (tmp_path / "my-model" / "modules.json").is_file()


def wait_for(url: str, process: subprocess.Popen, timeout: float = 300.0) -> None:
    """Until `url` answers 200, or fail when the process dies or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "the README's server exited"
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {timeout} s")


def test_the_readme_and_the_docs_name_no_path_outside_the_repository():
    root = Path(__file__).resolve().parents[1]
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            assert "../shared" not in line, f"{page.name}:{number} names a path outside the repository: {line.strip()}"
