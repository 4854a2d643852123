"""The compiled training step (`--compile`, TrainConfig.compile, the drop-in's `torch_compile`): ten steps give the
eager losses (1e-5) and weights; where compiling is unavailable the run goes on eagerly after one log line."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert.training import Objective, Stage, TrainConfig, Trainer
from sbert.training.compiled import CompiledStep
from tests.tiny_models import CORPUS


@pytest.fixture(scope="module")
def no_dropout(tiny_dirs, tmp_path_factory) -> Path:
    """The tiny BERT without dropout: a compiled graph draws its random masks its own way, so with dropout the two
    runs would differ by their masks, not by the compiling."""
    folder = tmp_path_factory.mktemp("no-dropout") / "bert"
    shutil.copytree(tiny_dirs["bert"], folder)
    config = json.loads((folder / "config.json").read_text())
    config |= {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("compile") / "pairs.csv"
    rows = [f'"{a}","{b}",{(i * 7) % 6}' for i, (a, b) in enumerate(zip(CORPUS, CORPUS[1:] + CORPUS[:1], strict=True))]
    path.write_text("sentence1,sentence2,score\n" + "\n".join(rows * 4) + "\n")
    return path


def losses(model: Path, pairs: Path, out: Path, backend: str) -> list[float]:
    stage = Stage((Objective("regression", f"csv[scale=0-5]:{pairs}"),), batch_size=4, max_steps=10, length_groups=1,
                  epochs=2)  # fmt: skip
    config = TrainConfig(model=str(model), output=str(out), stages=(stage,), device="cpu", log_steps=1,
                         compile=backend)  # fmt: skip
    Trainer(config, show_progress=False).run()
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    return [r["loss"] for r in log if r["event"] == "train"]


def ours(caplog) -> list:
    return [r for r in caplog.records if r.name == "sbert.training.compiled"]


def test_ten_compiled_steps_give_the_eager_losses(no_dropout, pairs, tmp_path, caplog):
    torch._dynamo.reset()
    eager = losses(no_dropout, pairs, tmp_path / "eager", "")
    with caplog.at_level(logging.WARNING, logger="sbert.training.compiled"):
        compiled = losses(no_dropout, pairs, tmp_path / "compiled", "aot_eager")
    assert len(eager) == 10 and not ours(caplog)  # compiled throughout: no fallback
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] > 0  # dynamo really traced the step
    np.testing.assert_allclose(compiled, eager, rtol=1e-5, atol=1e-6)
    assert len(set(np.round(eager, 6))) > 1  # the losses move: a comparison that could fail


@pytest.mark.e2e  # inductor generates and compiles C++ for the step: minutes on 2 cores (CI's e2e step)
def test_inductor_compiled_steps_give_the_eager_losses(no_dropout, pairs, tmp_path):
    torch._dynamo.reset()
    eager = losses(no_dropout, pairs, tmp_path / "eager", "")
    np.testing.assert_allclose(losses(no_dropout, pairs, tmp_path / "inductor", "inductor"), eager,
                               rtol=1e-5, atol=1e-6)  # fmt: skip


def test_where_compiling_fails_the_run_goes_on_eagerly_after_one_line(tiny_dirs, pairs, tmp_path, caplog, monkeypatch):
    def unavailable(module, **options):
        def broken(*args, **kwargs):
            raise RuntimeError("InvalidCxxCompiler: no working C++ compiler found")

        return broken

    eager = losses(tiny_dirs["bert"], pairs, tmp_path / "eager", "")
    monkeypatch.setattr(torch, "compile", unavailable)
    with caplog.at_level(logging.WARNING, logger="sbert.training.compiled"):
        fallen = losses(tiny_dirs["bert"], pairs, tmp_path / "fallen", "inductor")
    np.testing.assert_allclose(fallen, eager, rtol=1e-6)
    lines = [r.getMessage() for r in ours(caplog)]
    assert len(lines) == 1 and "runs eagerly" in lines[0] and "InvalidCxxCompiler" in lines[0]


def test_a_failure_of_the_computation_itself_is_not_hidden():
    step = CompiledStep(torch.nn.Linear(2, 2), "eager")
    step(torch.ones(1, 2))  # the first call compiles and runs
    with pytest.raises(RuntimeError, match=r"shapes cannot be multiplied|size mismatch|mat1 and mat2"):
        step(torch.ones(1, 3))
    with pytest.raises(ValueError, match="compile backend must be one of"):
        CompiledStep(torch.nn.Linear(2, 2), "tvm")
