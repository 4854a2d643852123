"""config_sentence_transformers.json is parsed once per load, and again only when the file changes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import sbert
from sbert.errors import ModelFormatError
from sbert.formats import model_config
from sbert.formats.layout import MODEL_CONFIG_FILE
from tests.colbert_fixtures import build_punctuated_bert, build_pylate


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = model_config.read_json

    def counting(path: Path) -> object:
        seen.append(path.name)
        return real(path)

    monkeypatch.setattr(model_config, "read_json", counting)
    model_config._parsed.cache_clear()
    return seen


def test_a_multivector_load_parses_the_config_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = build_pylate(build_punctuated_bert(tmp_path / "bert"), tmp_path / "colbert")
    seen = _count_parses(monkeypatch)
    model = sbert.load(str(folder))  # kind detection, PyLate's keys and the settings all ask for it
    assert type(model).__name__ == "MultiVectorEncoder"
    assert seen.count(MODEL_CONFIG_FILE) == 1


def test_a_changed_file_is_read_again_and_callers_get_copies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / MODEL_CONFIG_FILE
    path.write_text(json.dumps({"prompts": {"query": "q: "}}))
    seen = _count_parses(monkeypatch)
    first = model_config.read_model_config(tmp_path)
    first["prompts"]["query"] = "changed by a caller"
    assert model_config.read_model_config(tmp_path)["prompts"]["query"] == "q: "
    path.write_text(json.dumps({"prompts": {"query": "query: "}}))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))  # a coarse clock
    assert model_config.read_model_config(tmp_path)["prompts"]["query"] == "query: "
    assert seen.count(MODEL_CONFIG_FILE) == 2
    path.write_text("[1, 2]")
    with pytest.raises(ModelFormatError, match="expected a JSON object"):
        model_config.read_model_config(tmp_path)
