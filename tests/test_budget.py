"""The CI deadline plugin (tests/budget.py): nothing changes without one; past it, tests are skipped and counted."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.budget import DEADLINE_ENV, Budget, read_deadline, recent_test_files
from tests.conftest import ROOT


def item(name: str) -> SimpleNamespace:
    return SimpleNamespace(path=Path("tests") / name)


def test_without_a_deadline_every_test_runs():
    budget = Budget(None)
    for name in ("test_a.py", "test_b.py"):
        budget.check(item(name))
    assert budget.started == 2 and budget.summary() is None


def test_past_the_deadline_tests_are_skipped_and_counted_per_file():
    budget = Budget(1.0)  # 1970: long past
    for name in ("test_b.py", "test_a.py", "test_b.py"):
        with pytest.raises(pytest.skip.Exception, match="CI time budget"):
            budget.check(item(name))
    assert budget.started == 0
    expected = "3 tests not reached after 0 started; not reached: test_a.py (1), test_b.py (2)"
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
