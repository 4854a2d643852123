"""Shared fixtures: tiny random encoders (no downloads) and paths to the real data in ../shared."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Tests never reach for the network: a Hub lookup must fail fast, not wait for a timeout.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tests.tiny_models import BUILDERS

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Plain Hugging Face directories of tiny BERT, RoBERTa and ALBERT encoders."""
    base = tmp_path_factory.mktemp("tiny")
    return {name: build(base / name) for name, build in BUILDERS.items()}


@pytest.fixture(scope="session", params=sorted(BUILDERS))
def tiny_dir(request: pytest.FixtureRequest, tiny_dirs: dict[str, Path]) -> Path:
    """Each tiny encoder in turn."""
    return tiny_dirs[request.param]


@pytest.fixture(scope="session")
def sts_test_path() -> Path:
    """The STS benchmark test split (read in place, never copied)."""
    path = SHARED_DATA / "stsbenchmark" / "sts-test.csv"
    if not path.is_file():
        pytest.fail(f"shared data missing: {path}")
    return path
