"""A deadline for the test run on a slow CI machine: tests not started by then are skipped and counted.

`.ci/run` sets `SBERT_TEST_DEADLINE` (Unix seconds) so that on a heavily loaded machine the run ends
in time and says exactly which tests it did not reach, instead of being killed mid-run with nothing
said. Unset (the default, and every `make test` by hand) it changes nothing: every test runs. A test
that started before the deadline runs to its end; the hang guards in the tests bound how long that is.
With a deadline, the test files that the latest commits touched run first, so a partial run checks
the newest work.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

DEADLINE_ENV = "SBERT_TEST_DEADLINE"
NOT_REACHED = f"not reached before ${DEADLINE_ENV} (the CI time budget on this machine ran out)"


def read_deadline() -> float | None:
    """The deadline from the environment, None when unset; a value that is not a number stops the run."""
    raw = os.environ.get(DEADLINE_ENV, "").strip()
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        raise pytest.UsageError(f"{DEADLINE_ENV}={raw!r}: expected Unix seconds (e.g. $(date +%s))") from None


class Budget:
    """Counts the tests run and the tests skipped because the deadline had passed."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        self.started = 0
        self.not_reached: Counter[str] = Counter()

    def check(self, item: pytest.Item) -> None:
        """Skip `item` when the deadline has passed."""
        if self.deadline is not None and time.time() > self.deadline:
            pytest.skip(NOT_REACHED)

    def count(self, report: pytest.TestReport) -> None:
        """Tally a test's setup report as started or not reached (under xdist the controller sees them all)."""
        if report.when != "setup":
            return
        if report.skipped and NOT_REACHED in str(report.longrepr):
            self.not_reached[Path(report.fspath).name] += 1
        else:
            self.started += 1

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count each test once, in the process that prints the summary (the controller under xdist)."""
        self.count(report)

    def summary(self) -> str | None:
        """One line for the end of the run, None when every test was reached."""
        if not self.not_reached:
            return None
        missed = sum(self.not_reached.values())
        by_file = ", ".join(f"{name} ({n})" for name, n in sorted(self.not_reached.items()))
        return f"{DEADLINE_ENV}: {missed} tests not reached after {self.started} started; not reached: {by_file}"


_BUDGET_KEY = pytest.StashKey[Budget]()


def recent_test_files(root: Path, commits: int = 30) -> list[str]:
    """Test files (tests/test_*.py) the last `commits` commits touched, newest first; [] without git."""
    try:
        log = subprocess.run(
            ["git", "-C", str(root), "log", f"-{commits}", "--name-only", "--format="],
            capture_output=True, text=True, timeout=120,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return []
    names = [line for line in log.splitlines() if line.startswith("tests/test_") and line.endswith(".py")]
    return list(dict.fromkeys(names))


def pytest_configure(config: pytest.Config) -> None:
    """Read the deadline once, at start-up, so a bad value fails before any test runs."""
    budget = Budget(read_deadline())
    config.stash[_BUDGET_KEY] = budget
    config.pluginmanager.register(budget, "sbert-budget")  # its logreport hook tallies each test


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With a deadline, move the recently changed test files to the front (a stable sort: order within a file kept)."""
    if config.stash[_BUDGET_KEY].deadline is None:
        return
    root = Path(str(config.rootpath))
    rank = {name: i for i, name in enumerate(recent_test_files(root))}
    items.sort(key=lambda item: rank.get(Path(os.path.relpath(item.path, root)).as_posix(), len(rank)))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Past the deadline, skip before the test's fixtures are built (they can cost minutes)."""
    item.config.stash[_BUDGET_KEY].check(item)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Say how many tests the deadline cut, per file, so a partial CI run is never mistaken for a full one."""
    line = config.stash[_BUDGET_KEY].summary()
    if line:
        terminalreporter.write_line(line, yellow=True, bold=True)
