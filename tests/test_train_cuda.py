"""GPU training on a tiny encoder: bf16 steps, the device-side non-finite guard, checkpoints that move
between GPU and CPU. Run on the lent GPU with `pytest -m cuda`; skipped elsewhere."""

import json
import shutil
from pathlib import Path

import pytest
import torch

from sbert import SentenceEncoder
from sbert.losses.cosine import CosineSimilarityLoss
from sbert.training import Objective, Stage, TrainConfig, Trainer, TrainingError
from sbert.training.checkpoint import checkpoint_dirs

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none visible to torch here)"),
]


@pytest.fixture
def train(data_dir: Path) -> str:
    """STS dev pairs as training data (from .device/data on the GPU machine, where ../shared is absent)."""
    return f"stsb:{data_dir / 'stsbenchmark' / 'sts-dev.csv'}"


def config(model: Path, out: Path, device: str, train: str, precision: str = "auto", **run) -> TrainConfig:
    stage = Stage((Objective("regression", train),), batch_size=16, max_steps=24)
    return TrainConfig(model=str(model), output=str(out), stages=(stage,), device=device, precision=precision, **run)


def test_bf16_training_moves_the_weights_and_stays_finite(tiny_dirs, tmp_path, train):
    Trainer(config(tiny_dirs["bert"], tmp_path / "m", "cuda", train, "bf16"), show_progress=False).run()
    before = SentenceEncoder.load(tiny_dirs["bert"], device="cpu").state_dict()
    after = SentenceEncoder.load(tmp_path / "m", device="cpu").state_dict()
    moved = [k for k in after if after[k].is_floating_point() and not torch.equal(after[k], before[k])]
    assert moved and all(torch.isfinite(after[k]).all() for k in moved)


def test_a_nan_on_the_gpu_stops_at_the_next_check_with_the_weights_of_the_last_good_step(
    tiny_dirs, tmp_path, monkeypatch, train
):
    real, calls = CosineSimilarityLoss.forward, []

    def poisoned(self, embeddings, labels):
        calls.append(1)
        loss = real(self, embeddings, labels)
        return loss * float("nan") if len(calls) >= 7 else loss

    monkeypatch.setattr(CosineSimilarityLoss, "forward", poisoned)
    run = config(tiny_dirs["bert"], tmp_path / "m", "cuda", train, "bf16", checkpoint_steps=5, log_steps=10)
    with pytest.raises(TrainingError, match=r"step 7: the loss or its gradients were not finite.*step-5"):
        Trainer(run, show_progress=False).run()
    assert [p.name for p in checkpoint_dirs(Path(f"{tmp_path / 'm'}.run"))] == ["step-5"]


@pytest.mark.parametrize(("first", "second"), [("cuda", "cpu"), ("cpu", "cuda")])
def test_a_checkpoint_resumes_on_the_other_device(tiny_dirs, tmp_path, first, second, train):
    out = tmp_path / "m"
    Trainer(config(tiny_dirs["bert"], out, first, train, "fp32", checkpoint_steps=10), show_progress=False).run()
    for later in checkpoint_dirs(Path(f"{out}.run"))[1:]:  # keep step-10 only, then finish elsewhere
        shutil.rmtree(later)
    shutil.rmtree(out)
    again = config(tiny_dirs["bert"], out, second, train, "fp32", checkpoint_steps=10)
    result = Trainer(again, show_progress=False).run(resume=True)
    assert result.steps == 24
    vectors = SentenceEncoder.load(out, device="cpu").encode(["a man plays a guitar"])
    assert torch.isfinite(torch.as_tensor(vectors)).all()


def test_every_dev_evaluation_scores_the_weights_of_its_step(tiny_dirs, tmp_path, data_dir, train):
    # Fused AdamW (CUDA) leaves parameter versions alone: a stale cast copy scored the first weights forever.
    dev = f"stsb:{data_dir / 'stsbenchmark' / 'sts-test.csv'}"
    stage = Stage((Objective("regression", train),), dev=dev, batch_size=16, max_steps=24, eval_steps=8, lr=1e-4)
    run = TrainConfig(model=str(tiny_dirs["bert"]), output=str(tmp_path / "m"), stages=(stage,), device="cuda")
    Trainer(run, show_progress=False).run()
    log = [json.loads(line) for line in (tmp_path / "m" / "train_log.jsonl").read_text().splitlines()]
    scores = [e["score"] for e in log if e["event"] == "eval"]
    assert len(scores) == 3 and len(set(scores)) == 3, scores


def test_fp16_training_from_fp16_stored_weights(real_model_dir, tmp_path, train):
    # Weights stored in fp16 load as fp32 masters, so the grad scaler can unscale their gradients.
    Trainer(config(real_model_dir, tmp_path / "m", "cuda", train, "fp16"), show_progress=False).run()
    trained = SentenceEncoder.load(tmp_path / "m", device="cpu")
    assert {p.dtype for p in trained.parameters()} == {torch.float32}
    assert torch.isfinite(torch.as_tensor(trained.encode(["a man plays a guitar"]))).all()
