"""GPU training on a tiny encoder: bf16 steps, the device-side non-finite guard, checkpoints that move
between GPU and CPU. Run on the lent GPU with `pytest -m cuda`; skipped elsewhere."""

import shutil
from pathlib import Path

import pytest
import torch

from sbert import SentenceEncoder
from sbert.losses.cosine import CosineSimilarityLoss
from sbert.training import Objective, Stage, TrainConfig, Trainer, TrainingError
from sbert.training.checkpoint import checkpoint_dirs
from tests.conftest import SHARED_DATA

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none visible to torch here)"),
]

TRAIN = f"stsb:{SHARED_DATA / 'stsbenchmark' / 'sts-dev.csv'}"


def config(model: Path, out: Path, device: str, precision: str = "auto", **run) -> TrainConfig:
    stage = Stage((Objective("regression", TRAIN),), batch_size=16, max_steps=24)
    return TrainConfig(model=str(model), output=str(out), stages=(stage,), device=device, precision=precision, **run)


def test_bf16_training_moves_the_weights_and_stays_finite(tiny_dirs, tmp_path):
    Trainer(config(tiny_dirs["bert"], tmp_path / "m", "cuda", "bf16"), show_progress=False).run()
    before = SentenceEncoder.load(tiny_dirs["bert"], device="cpu").state_dict()
    after = SentenceEncoder.load(tmp_path / "m", device="cpu").state_dict()
    moved = [k for k in after if after[k].is_floating_point() and not torch.equal(after[k], before[k])]
    assert moved and all(torch.isfinite(after[k]).all() for k in moved)


def test_a_nan_on_the_gpu_stops_at_the_next_check_with_the_weights_of_the_last_good_step(
    tiny_dirs, tmp_path, monkeypatch
):
    real, calls = CosineSimilarityLoss.forward, []

    def poisoned(self, embeddings, labels):
        calls.append(1)
        loss = real(self, embeddings, labels)
        return loss * float("nan") if len(calls) >= 7 else loss

    monkeypatch.setattr(CosineSimilarityLoss, "forward", poisoned)
    run = config(tiny_dirs["bert"], tmp_path / "m", "cuda", "bf16", checkpoint_steps=5, log_steps=10)
    with pytest.raises(TrainingError, match=r"step 7: the loss or its gradients were not finite.*step-5"):
        Trainer(run, show_progress=False).run()
    assert [p.name for p in checkpoint_dirs(Path(f"{tmp_path / 'm'}.run"))] == ["step-5"]


@pytest.mark.parametrize(("first", "second"), [("cuda", "cpu"), ("cpu", "cuda")])
def test_a_checkpoint_resumes_on_the_other_device(tiny_dirs, tmp_path, first, second):
    out = tmp_path / "m"
    Trainer(config(tiny_dirs["bert"], out, first, "fp32", checkpoint_steps=10), show_progress=False).run()
    for later in checkpoint_dirs(Path(f"{out}.run"))[1:]:  # keep step-10 only, then finish elsewhere
        shutil.rmtree(later)
    shutil.rmtree(out)
    result = Trainer(config(tiny_dirs["bert"], out, second, "fp32", checkpoint_steps=10), show_progress=False).run(
        resume=True
    )
    assert result.steps == 24
    vectors = SentenceEncoder.load(out, device="cpu").encode(["a man plays a guitar"])
    assert torch.isfinite(torch.as_tensor(vectors)).all()
