"""The training loop on tiny encoders: repeatability, resume after kill -9, faults, multi-stage recipes."""

import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.data import load_dataset
from sbert.errors import SbertError
from sbert.losses.cosine import CosineSimilarityLoss
from sbert.training import Objective, Stage, TrainConfig, Trainer, TrainingError, load_config
from sbert.training.checkpoint import checkpoint_dirs, load_checkpoint
from tests.cli_runner import ENV
from tests.conftest import SHARED_DATA
from tests.tiny_models import CORPUS

STSB = SHARED_DATA / "stsbenchmark"


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    """Small slices of the real STS benchmark and SNLI files."""
    base = tmp_path_factory.mktemp("data")
    lines = (STSB / "sts-train.csv").read_text(encoding="utf-8").splitlines()
    (base / "train.csv").write_text("\n".join(lines[:96]) + "\n", encoding="utf-8")
    (base / "dev.csv").write_text("\n".join(lines[96:160]) + "\n", encoding="utf-8")
    for name in ("s1", "s2", "labels"):
        rows = (SHARED_DATA / "snli" / f"{name}.dev").read_text(encoding="utf-8").splitlines()[:90]
        (base / f"{name}.small").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return {"train": base / "train.csv", "dev": base / "dev.csv", "nli": base}


def regression(model: Path, data, out: Path, **stage) -> TrainConfig:
    objectives = (Objective("regression", f"stsb:{data['train']}"),)
    return TrainConfig(
        model=str(model), output=str(out), stages=(Stage(objectives, batch_size=8, **stage),), device="cpu"
    )


def weights(path: Path) -> dict[str, torch.Tensor]:
    return SentenceEncoder.load(path, device="cpu").state_dict()


def assert_same_weights(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


def test_training_moves_weights_writes_card_log_and_keeps_best(tiny_dirs, data, tmp_path):
    config = regression(tiny_dirs["bert"], data, tmp_path / "out", epochs=2, dev=f"stsb:{data['dev']}", eval_steps=4)
    result = Trainer(config, show_progress=False).run()
    assert result.steps == 24 and result.best_score is not None
    before, after = weights(tiny_dirs["bert"]), weights(tmp_path / "out")
    assert any(not torch.equal(before[k], after[k]) for k in before)
    card = (tmp_path / "out/README.md").read_text()
    assert str(tiny_dirs["bert"]) in card and "regression" in card and f"{result.best_score:.2f}" in card
    records = [json.loads(line) for line in (tmp_path / "out/train_log.jsonl").read_text().splitlines()]
    (stage,) = [r for r in records if r["event"] == "stage"]
    assert stage["total_steps"] == 24 and stage["total_parameters"] > 24  # the parameter count once overwrote it
    evals = [r for r in records if r["event"] == "eval"]
    assert [r["step"] for r in evals] == [4, 8, 12, 16, 20, 24]  # epoch ends fall on multiples of 4
    best = max(evals, key=lambda r: r["score"])
    assert best["score"] == pytest.approx(result.best_score, abs=1e-3)


def test_same_seed_gives_bit_identical_weights(tiny_dirs, data, tmp_path):
    for name in ("a", "b"):
        Trainer(regression(tiny_dirs["roberta"], data, tmp_path / name), show_progress=False).run()
    assert_same_weights(weights(tmp_path / "a"), weights(tmp_path / "b"))


def train_cmd(model: Path, data, out: Path, *extra: str, batch: int = 2, epochs: int = 3) -> list[str]:
    """The CLI arguments of a small regression run (after the interpreter or launcher)."""
    return [
        *("-m", "sbert.cli.main", "train", "--model", str(model), "--objective", "regression"),
        *("--train", f"stsb:{data['train']}", "--output", str(out), "--batch-size", str(batch)),
        *("--epochs", str(epochs), "--device", "cpu", "--no-progress", *extra),
    ]


@pytest.mark.e2e
def test_kill_9_then_resume_gives_the_uninterrupted_weights(tiny_dirs, data, tmp_path):
    reference = tmp_path / "reference"
    subprocess.run(
        [sys.executable, *train_cmd(tiny_dirs["bert"], data, reference)], env=ENV, check=True, capture_output=True
    )
    out = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, *train_cmd(tiny_dirs["bert"], data, out, "--checkpoint-steps", "10")],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    run_dir = Path(f"{out}.run")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(int(p.name[5:]) >= 30 for p in checkpoint_dirs(run_dir)):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, "training finished before it could be killed"
    assert not out.exists()
    resumed = subprocess.run(
        [sys.executable, *train_cmd(tiny_dirs["bert"], data, out, "--checkpoint-steps", "10", "--resume")],
        env=ENV,
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert_same_weights(weights(reference), weights(out))


def test_a_run_without_checkpoints_leaves_only_the_model(tiny_dirs, data, tmp_path, monkeypatch):
    # A temp folder of the test's own: another `sbert train` on the machine makes and removes its own scratch
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    seen = []
    real_mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", lambda *a, **k: seen.append(real_mkdtemp(*a, **k)) or seen[-1])
    Trainer(regression(tiny_dirs["bert"], data, tmp_path / "out"), show_progress=False).run()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "tmp"]
    assert [Path(p).parent for p in seen if Path(p).name.startswith("sbert-run-")] == [scratch]  # the scratch was made
    assert not any(scratch.iterdir())  # and removed
    assert (tmp_path / "out" / "train_log.jsonl").is_file()


def test_existing_checkpoints_need_resume(tiny_dirs, data, tmp_path):
    config = regression(tiny_dirs["bert"], data, tmp_path / "out")
    config = TrainConfig(**{**config.__dict__, "checkpoint_steps": 5})
    Trainer(config, show_progress=False).run()
    with pytest.raises(SbertError, match="pass --resume"):
        Trainer(config, show_progress=False).run()


def test_nan_loss_stops_and_keeps_the_last_checkpoint(tiny_dirs, data, tmp_path, monkeypatch):
    config = TrainConfig(**{**regression(tiny_dirs["bert"], data, tmp_path / "out").__dict__, "checkpoint_steps": 4})
    real_forward, calls = CosineSimilarityLoss.forward, []

    def poisoned(self, embeddings, labels):
        calls.append(1)
        loss = real_forward(self, embeddings, labels)
        return loss * float("nan") if len(calls) == 7 else loss

    monkeypatch.setattr(CosineSimilarityLoss, "forward", poisoned)
    with pytest.raises(TrainingError, match=r"step 7: regression loss is nan.*step-4"):
        Trainer(config, show_progress=False).run()
    progress, states = load_checkpoint(checkpoint_dirs(Path(f"{tmp_path / 'out'}.run"))[-1])
    assert progress.global_step == 4
    assert all(torch.isfinite(v).all() for v in states["module"].values() if v.is_floating_point())
    assert not (tmp_path / "out").exists()


def test_a_kill_during_a_checkpoint_leaves_the_previous_one(tiny_dirs, data, tmp_path, monkeypatch):
    config = TrainConfig(**{**regression(tiny_dirs["bert"], data, tmp_path / "out").__dict__, "checkpoint_steps": 4})
    real_save, saves = torch.save, []

    def dying_save(obj, f, *args, **kwargs):
        saves.append(1)
        if len(saves) == 2:
            Path(f).write_bytes(b"half a checkpoint")
            raise KeyboardInterrupt  # what a kill looks like to the code that is writing
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", dying_save)
    with pytest.raises(KeyboardInterrupt):
        Trainer(config, show_progress=False).run()
    found = checkpoint_dirs(Path(f"{tmp_path / 'out'}.run"))
    assert [p.name for p in found] == ["step-4"]
    assert load_checkpoint(found[0])[0].global_step == 4


def test_bad_input_fails_before_training(tiny_dirs, data, tmp_path):
    good = Stage((Objective("regression", f"stsb:{data['train']}"),))
    bad_stages = {
        "unknown objective": Stage((Objective("telepathy", f"stsb:{data['train']}"),)),
        "wrong data kind": Stage((Objective("classification", f"stsb:{data['train']}"),)),
        "missing file": Stage((Objective("regression", f"stsb:{tmp_path / 'nope.csv'}"),)),
    }
    for reason, bad in bad_stages.items():
        out = tmp_path / reason.replace(" ", "-")
        config = TrainConfig(model=str(tiny_dirs["bert"]), output=str(out), stages=(good, bad), device="cpu")
        with pytest.raises(SbertError):
            Trainer(config, show_progress=False).run()
        assert not out.exists() and not Path(f"{out}.run").exists(), reason


def test_two_stage_recipe_with_classification_head_and_triplets(tiny_dirs, data, tmp_path):
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(f"""
model = "{tiny_dirs["albert"]}"
output = "out"
seed = 3

[[stage]]
batch_size = 8
objectives = [
  {{ name = "classification", train = "nli:{data["nli"]}:small", options = {{ concat = "u,v,|u-v|,u*v" }} }},
  {{ name = "triplet", train = "nli-triplets:{data["nli"]}:small" }},
]

[[stage]]
objective = "cosent"
train = "stsb:{data["train"]}"
dev = "stsb:{data["dev"]}"
batch_size = 16
""")
    config = load_config(recipe, {"device": "cpu"})
    assert config.output == str(tmp_path / "out") and len(config.stages) == 2 and len(config.stages[0].objectives) == 2
    config = TrainConfig(**{**config.__dict__, "output": str(tmp_path / "out")})
    Trainer(config, show_progress=False).run()
    model = SentenceEncoder.load(tmp_path / "out", device="cpu")
    assert model.encode(CORPUS).shape == (len(CORPUS), 32)


def test_classification_head_is_saved_beside_the_model(tiny_dirs, data, tmp_path):
    stage = Stage((Objective("classification", f"nli:{data['nli']}:small"),), batch_size=16)
    config = TrainConfig(model=str(tiny_dirs["bert"]), output=str(tmp_path / "m"), stages=(stage,), device="cpu")
    Trainer(config, show_progress=False).run()
    head = json.loads((tmp_path / "m/classifier_head/config.json").read_text())
    assert head == {
        "concat": "u,v,|u-v|",
        "in_features": 96,
        "num_labels": 3,
        "label_names": ["entailment", "neutral", "contradiction"],
    }


def test_config_errors_name_the_problem(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text(
        'model = "m"\noutput = "o"\nlearning_rate = 1\n[[stage]]\nobjective = "regression"\ntrain = "x:y"\n'
    )
    with pytest.raises(SbertError, match=r"unknown keys \['learning_rate'\]"):
        load_config(path)
    path.write_text('model = "m"\noutput = "o"\n[[stage]]\nobjective = "regression"\ntrain = "x:y"\nepochs = 0\n')
    with pytest.raises(SbertError, match="epochs=0 is out of range"):
        load_config(path)


def test_cli_train_argument_errors(tmp_path):
    from tests.cli_runner import run_cli

    proc = run_cli("train", "--model", "m", "--output", "o", "--objective", "regression")
    assert proc.returncode == 2 and "one --objective per --train" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.e2e  # three new processes (launcher and two ranks), each importing torch: minutes on a loaded machine
def test_torchrun_two_processes_on_gloo(tiny_dirs, data, tmp_path):
    out = tmp_path / "ddp"
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29533"]
    cmd = [*launcher, *train_cmd(tiny_dirs["bert"], data, out, batch=8, epochs=1)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert records[0]["world"] == 2 and records[-1]["step"] == 12
    assert np.isfinite(SentenceEncoder.load(out, device="cpu").encode(CORPUS)).all()


def test_shipped_recipes_parse_and_point_at_real_data():
    from sbert.data.home import data_home, missing_sets

    if missing_sets():
        pytest.skip(f"the data home {data_home()} lacks {', '.join(missing_sets())} (sbert data fetch, or SBERT_DATA)")
    for recipe in sorted((Path(__file__).resolve().parents[1] / "recipes").glob("*.toml")):
        config = load_config(recipe)
        for stage in config.stages:
            for spec in [o.train for o in stage.objectives] + ([stage.dev] if stage.dev else []):
                path = spec.split(":", 1)[1].split(":")[0]
                assert Path(path).exists(), f"{recipe.name}: {spec}"


def test_pooling_override_builds_a_new_head(tiny_dirs, data, tmp_path):
    config = TrainConfig(**{**regression(tiny_dirs["bert"], data, tmp_path / "m").__dict__, "pooling": "max"})
    Trainer(config, show_progress=False).run()
    assert SentenceEncoder.load(tmp_path / "m", device="cpu")[1].modes == ["max"]


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_token_budget_with_accumulation_counts_steps_and_resumes_exactly(tiny_dirs, data, tmp_path):
    import shutil

    from sbert.training.epoch_plan import epoch_plan
    from sbert.training.setup import prepare_objectives

    config = regression(tiny_dirs["bert"], data, tmp_path / "a", batch_tokens=160, grad_accum=2, epochs=2)
    config = TrainConfig(**{**config.__dict__, "checkpoint_steps": 3, "keep_checkpoints": 50})
    result = Trainer(config, show_progress=False).run()
    model = SentenceEncoder.load(tiny_dirs["bert"], device="cpu")
    (prepared,) = prepare_objectives(model, config.stages[0], [load_dataset(f"stsb:{data['train']}")])
    lengths = [[2 * n for n in prepared.lengths]]
    plans = [epoch_plan(lengths, 8, 0, 0, epoch, 50, 160) for epoch in (0, 1)]
    assert all(len(b) * max(lengths[0][i] for i in b) <= 160 or len(b) == 1 for p in plans for _, b in p)
    assert result.steps == sum((len(p) + 1) // 2 for p in plans)
    # A run resumed from the step-3 checkpoint ends with the same weights.
    resumed = TrainConfig(**{**config.__dict__, "output": str(tmp_path / "b")})
    step3 = Path("checkpoints") / "step-3"
    shutil.copytree(Path(f"{tmp_path / 'a'}.run") / step3, tmp_path / "b.run" / step3)
    Trainer(resumed, show_progress=False).run(resume=True)
    assert_same_weights(weights(tmp_path / "a"), weights(tmp_path / "b"))


def test_stage_flags_beside_a_recipe_apply_to_every_stage():
    from sbert.cli.main import build_parser
    from sbert.cli.train import build_config

    recipe = Path(__file__).resolve().parents[1] / "recipes" / "nli-then-stsb.toml"
    args = build_parser().parse_args(["train", "--config", str(recipe), "--batch-tokens", "4096", "--grad-accum", "2"])
    config = build_config(args)
    assert [(s.batch_tokens, s.grad_accum, s.epochs) for s in config.stages] == [(4096, 2, 1), (4096, 2, 4)]
