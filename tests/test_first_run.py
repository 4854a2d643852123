"""What a new user meets first: the CLI's start-up, the package's names, quiet loads, readable errors."""

import logging
import subprocess
import sys
from pathlib import Path

import pytest

import sbert
from sbert import SentenceEncoder
from sbert.formats.model_dirs import hub_reason

# Optional extras and heavy libraries: building the CLI's parsers (`sbert --help`) must import none of them.
HEAVY = (
    "torch",
    "transformers",
    "scipy",
    "orjson",
    "pyarrow",
    "fastapi",
    "uvicorn",
    "onnxruntime",
    "openvino",
    "faiss",
)


def test_building_the_cli_parsers_imports_no_heavy_or_optional_library():
    probe = (
        "import sys; from sbert.cli.main import build_parser; build_parser(); "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_dir_lists_the_public_names():
    names = dir(sbert)
    for name in ("SentenceEncoder", "SparseEncoder", "CrossEncoder", "StaticEncoder", "train", "__version__"):
        assert name in names


def test_loads_and_saves_are_quiet_unless_the_sbert_logger_asks(tiny_dirs, tmp_path, capfd):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    model.save(tmp_path / "m")
    SentenceEncoder.load(tmp_path / "m", device="cpu")
    quiet = capfd.readouterr().err
    assert "Loading weights" not in quiet and "Writing model shards" not in quiet
    logger = logging.getLogger("sbert")
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        SentenceEncoder.load(tmp_path / "m", device="cpu")
    finally:
        logger.setLevel(level)
    assert "Loading weights" in capfd.readouterr().err


def test_an_unknown_hub_model_gets_a_whole_reason(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(sbert.errors.ModelNotFoundError) as caught:
        SentenceEncoder.load("nobody/no-such-model")
    assert str(caught.value).endswith("(not in the local Hub cache, and the Hub could not be reached (offline?))")
    assert hub_reason(ValueError("First sentence here. A second one that would be cut.")) == (
        "ValueError: First sentence here"
    )


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_a_reader_that_leaves_early_ends_the_command_quietly():
    # stdout is a pipe whose reader is gone (`sbert similarity ... | head` after head exits): no traceback, no
    # "error: Broken pipe", the shell's code for a SIGPIPE'd tool
    probe = (
        "import os, sys; r, w = os.pipe(); os.close(r); os.dup2(w, 1); from sbert.cli.main import main; "
        "sys.exit(main(['similarity', 'A man is eating.', 'Someone eats.']))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 141, done.stderr
    assert done.stderr.strip() == ""


def test_install_hints_name_what_works_for_this_install(monkeypatch):
    """From a clone (make's editable install) the hint names the clone and this interpreter; from a wheel, the name."""
    from sbert import install_hint as hint

    root = Path(__file__).resolve().parents[1]
    hint.editable_root.cache_clear()
    assert hint.editable_root() == str(root)  # `pip install 'sbert[serve]'` means nothing to pip from a clone
    assert hint.install_hint("serve") == f"{sys.executable} -m pip install -e '{root}[serve]'"
    monkeypatch.setattr(hint, "editable_root", lambda: None)
    assert hint.install_hint("serve") == "pip install 'sbert[serve]'"
