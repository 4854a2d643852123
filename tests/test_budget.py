"""The CI deadline plugin (tests/budget.py): nothing changes without one; past it, tests are skipped and counted."""

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.budget import DEADLINE_ENV, Budget, read_deadline, recent_test_files
from tests.conftest import ROOT


def item(name: str) -> SimpleNamespace:
    return SimpleNamespace(path=Path("tests") / name)


def setup_report(name: str, skipped: str | None = None) -> SimpleNamespace:
    """What pytest reports for a test's setup: passed, or skipped with a reason."""
    longrepr = None if skipped is None else (f"tests/{name}", 1, f"Skipped: {skipped}")
    return SimpleNamespace(when="setup", skipped=skipped is not None, longrepr=longrepr, fspath=f"tests/{name}")


def test_without_a_deadline_every_test_runs():
    budget = Budget(None)
    for name in ("test_a.py", "test_b.py"):
        budget.check(item(name))
        budget.count(setup_report(name))
        budget.count(SimpleNamespace(when="call", skipped=False, longrepr=None, fspath=f"tests/{name}"))
    assert budget.started == 2 and budget.summary() is None


def test_past_the_deadline_tests_are_skipped_and_counted_per_file():
    budget = Budget(1.0)  # 1970: long past
    for name in ("test_b.py", "test_a.py", "test_b.py"):
        with pytest.raises(pytest.skip.Exception, match="CI time budget") as skip:
            budget.check(item(name))
        budget.count(setup_report(name, skipped=skip.value.msg))
    budget.count(setup_report("test_c.py", skipped="needs a CUDA GPU"))  # another skip is a started test
    assert budget.started == 1
    expected = "3 tests not reached after 1 started; not reached: test_a.py (1), test_b.py (2)"
    assert budget.summary() == f"{DEADLINE_ENV}: {expected}"


def test_a_deadline_that_is_not_a_number_stops_the_run(monkeypatch):
    monkeypatch.setenv(DEADLINE_ENV, "tomorrow")
    with pytest.raises(pytest.UsageError, match=f"{DEADLINE_ENV}='tomorrow'"):
        read_deadline()
    monkeypatch.setenv(DEADLINE_ENV, " ")
    assert read_deadline() is None


def test_recent_test_files_come_from_git(tmp_path):
    recent = recent_test_files(ROOT)
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    assert recent and all(name.startswith("tests/test_") for name in recent)
    assert len(set(recent)) == len(recent)
    assert recent_test_files(tmp_path) == []  # no repository there: no reordering


def test_two_workers_report_the_tests_they_did_not_reach(tmp_path):
    # make test runs the suite in two xdist workers: the summary line must come from the controller.
    (tmp_path / "test_some.py").write_text("def test_one():\n    pass\n\n\ndef test_two():\n    pass\n")
    env = {**os.environ, DEADLINE_ENV: "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "tests.budget", "-n", "2", "-p", "no:cacheprovider"]
    run = subprocess.run(
        [*command, str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:]
    assert f"{DEADLINE_ENV}: 2 tests not reached after 0 started; not reached: test_some.py (2)" in run.stdout
