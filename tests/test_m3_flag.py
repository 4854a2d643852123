"""BGE-M3 against FlagEmbedding itself (issue 56, part 2): BGEM3FlagModel.encode and compute_score in their own
venv (FlagEmbedding 1.4.2 needs transformers <= 5.9: tests/flag_m3_reference.py), sbert's M3Encoder here, the
same tiny folders; every output within 1e-5. `make test-e2e` builds the venv (.venv-flag)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import sbert
from sbert.m3 import pair_scores
from tests.m3_fixtures import build_m3, with_st_files
from tests.tiny_models import CORPUS

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
FLAG_PYTHON = Path(os.environ.get("SBERT_FLAG_PYTHON", ROOT / ".venv-flag" / "bin" / "python"))
TEXTS = [*CORPUS, "a", " ".join(CORPUS) * 3]  # mixed lengths in one batch; the last one is cut at the limit
PAIRS = [(CORPUS[0], CORPUS[1]), (CORPUS[2], " ".join(CORPUS) * 3), ("a", CORPUS[3])]
# FlagEmbedding's README example (its default is [1, 1, 1]), and ColBERT alone: "sparse+dense" is then 0/0
# (NaN in FlagEmbedding) and "colbert+sparse+dense" the ColBERT score.
WEIGHTS = [[0.4, 0.2, 0.4], [0.0, 0.0, 1.0]]


def flag_answer(folder: Path, max_length: int, tmp_path: Path) -> dict:
    """FlagEmbedding's outputs and scores on `folder`, from its venv."""
    if not FLAG_PYTHON.exists():
        pytest.skip(f"no FlagEmbedding venv at {FLAG_PYTHON} (make test-e2e builds it; or set SBERT_FLAG_PYTHON)")
    ask, answer = tmp_path / "ask.json", tmp_path / "answer.json"
    ask.write_text(json.dumps({"folder": str(folder), "texts": TEXTS, "max_length": max_length,
                               "pairs": PAIRS, "weights": WEIGHTS}), encoding="utf-8")  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}
    subprocess.run([str(FLAG_PYTHON), str(ROOT / "tests" / "flag_m3_reference.py"), str(ask), str(answer)],
                   check=True, env=env, timeout=600)  # fmt: skip
    return json.loads(answer.read_text(encoding="utf-8"))


@pytest.mark.parametrize("layout", ["flagembedding", "with sentence-transformers files"])
def test_three_outputs_and_scores_equal_flagembeddings(tmp_path, layout):
    folder = build_m3(tmp_path / "bge-m3-tiny")
    if layout != "flagembedding":
        folder = with_st_files(folder, tmp_path / "bge-m3-st")
    model = sbert.load(folder)
    theirs = flag_answer(folder, model.max_seq_length, tmp_path)
    every = dict(return_dense=True, return_sparse=True, return_colbert_vecs=True)
    mine = model.encode(TEXTS, batch_size=3, **every)
    np.testing.assert_allclose(mine["dense_vecs"], np.array(theirs["dense_vecs"]), atol=1e-5)
    for got, want, text in zip(mine["lexical_weights"], theirs["lexical_weights"], TEXTS, strict=True):
        assert got.keys() == want.keys(), text  # the same token ids kept (special ids and zero weights out)
        np.testing.assert_allclose([got[k] for k in want], [want[k] for k in want], atol=1e-5)
    assert any(theirs["lexical_weights"])  # the test can fail: some weights are kept
    for got, want in zip(mine["colbert_vecs"], theirs["colbert_vecs"], strict=True):
        np.testing.assert_allclose(got, np.array(want), atol=1e-5)  # every token after CLS, </s> included
    for i, (query, document) in enumerate(PAIRS):
        q, d = model.encode(query, **every), model.encode(document, **every)
        weighted = zip(WEIGHTS, theirs["scores_weighted"], strict=True)
        runs = [((1.0, 1.0, 1.0), theirs["scores_default"]), *weighted]
        for weights, want in runs:
            got = pair_scores(q, d, weights=weights)
            for key, values in want.items():
                assert got[key] == pytest.approx(values[i], abs=1e-5, nan_ok=True), (weights, key, i)
