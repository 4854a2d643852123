"""The GPU-minded training step on the CPU: prefetching, fused columns, accumulation, token budgets,
the device-side non-finite guard, cached MNRL, out-of-memory and cross-device checkpoint messages."""

import threading
import time

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.data.common import Dataset
from sbert.losses import build_loss
from sbert.losses.cached_mnrl import CachedMultipleNegativesRankingLoss
from sbert.losses.mnrl import MultipleNegativesRankingLoss
from sbert.training.config import Objective, Stage
from sbert.training.ddp import World
from sbert.training.epoch_plan import length_grouped_batches
from sbert.training.prefetch import Prefetcher, make_batch
from sbert.training.setup import TrainModule, prepare_objectives
from sbert.training.step import StepRunner, TrainingError, build_optimizer, retarget_optimizer
from tests.tiny_models import CORPUS

PAIRS = Dataset("pairs", "pair-score", list(zip(CORPUS, CORPUS[1:] + CORPUS[:1], strict=True)), [0.2] * 8)


def setup(tiny_dir, objective="regression", dataset=PAIRS, **options):
    model = SentenceEncoder.load(tiny_dir, device="cpu")
    stage = Stage((Objective(objective, "unused", options),))
    prepared = prepare_objectives(model, stage, [dataset])
    return model, prepared, TrainModule(model, [p.loss for p in prepared])


def runner(module, optimizer=None, deferred=False, lr=1e-3):
    optimizer = optimizer or build_optimizer(module, lr, 0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    return StepRunner(module, module, optimizer, scheduler, scaler, None, 1.0, World(), ["regression"], str, deferred)


def grads_of(module, batches):
    """Gradients of one accumulated step, read just before the optimizer would use them."""
    seen = {}
    step = runner(module, lr=0.0)  # weights stay put, so the next call sees the same ones
    step.optimizer.register_step_pre_hook(
        lambda *_: seen.update({n: p.grad.clone() for n, p in module.named_parameters() if p.grad is not None})
    )
    step.step(batches, 1)
    return seen


def batch(model, prepared, rows, fuse=False):
    return make_batch(
        [model.transformer.pad] * len(prepared.columns), prepared.columns, prepared.labels, 0, rows, fuse=fuse
    )


def test_prefetcher_keeps_order_runs_ahead_and_raises_at_the_failing_item():
    made = []

    def make(i):
        made.append(i)
        if i == 5:
            raise ValueError("bad row 5")
        return i * 10

    ahead = Prefetcher(make, range(8), depth=2)
    got = []
    with pytest.raises(ValueError, match="bad row 5"):
        for value in ahead:
            got.append(value)
            time.sleep(0.05)  # the thread fills the queue meanwhile
    ahead.close()
    assert got == [0, 10, 20, 30, 40]
    assert made == [0, 1, 2, 3, 4, 5]


def test_prefetcher_close_stops_the_thread_early():
    with Prefetcher(lambda i: i, range(10_000), depth=3) as ahead:
        assert next(iter(ahead)) == 0
    assert not any(t.name == "sbert-prefetch" for t in threading.enumerate())


def test_fused_columns_give_the_same_loss_and_gradients(tiny_dirs):
    model, prepared, module = setup(tiny_dirs["bert"])
    module.eval()  # no dropout: one forward over both columns must equal two
    separate = grads_of(module, [batch(model, prepared[0], range(8))])
    fused = batch(model, prepared[0], range(8), fuse=True)
    assert fused.splits == [8, 8] and len(fused.columns) == 1
    together = grads_of(module, [fused])
    for name, grad in separate.items():
        torch.testing.assert_close(together[name], grad, atol=1e-6, rtol=1e-4)


def test_two_accumulated_halves_equal_one_whole_batch(tiny_dirs):
    model, prepared, module = setup(tiny_dirs["bert"])
    module.eval()
    whole = grads_of(module, [batch(model, prepared[0], range(8))])
    halves = grads_of(module, [batch(model, prepared[0], range(3)), batch(model, prepared[0], range(3, 8))])
    for name, grad in whole.items():
        torch.testing.assert_close(halves[name], grad, atol=1e-6, rtol=1e-4)


def test_token_budget_batches_cover_every_example_once_within_budget():
    rng = np.random.default_rng(0)
    lengths = rng.integers(4, 60, size=500).tolist()
    batches = length_grouped_batches(lengths, 16, np.random.default_rng(1), group=10, tokens=400)
    assert sorted(i for b in batches for i in b) == list(range(500))
    for b in batches:
        assert len(b) * max(lengths[i] for i in b) <= 400
    sizes = [len(b) for b in batches]
    assert max(sizes) > 16 > min(sizes)  # short sentences share a batch, long ones split


def test_deferred_guard_skips_the_bad_step_and_all_after_it_then_names_it(tiny_dirs):
    model, prepared, module = setup(tiny_dirs["bert"])
    optimizer = build_optimizer(module, 1e-3, 0.01, fused=True)  # fused AdamW reads found_inf, on CPU too
    step = runner(module, optimizer, deferred=True)
    good = batch(model, prepared[0], range(8))
    step.step([good], 1)
    before = {k: v.clone() for k, v in module.state_dict().items()}
    bad = batch(model, prepared[0], range(8))
    bad.labels = torch.full_like(bad.labels, float("nan"))
    step.step([bad], 2)
    step.step([good], 3)  # a good step after a bad one must not move the weights either
    for k, v in module.state_dict().items():
        assert torch.equal(v, before[k]), k
    with pytest.raises(TrainingError, match=r"step 2: the loss or its gradients were not finite.*last good"):
        step.check()


def test_out_of_memory_names_the_batch_shape_and_the_flags(tiny_dirs, monkeypatch):
    model, prepared, module = setup(tiny_dirs["bert"])

    def no_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(model.transformer.auto_model, "forward", no_memory)
    with pytest.raises(TrainingError, match=r"step 4: out of GPU memory on a regression batch of 8x\d+, 8x\d+ tokens.*"
                       r"--batch-size \(or --batch-tokens\).*--grad-accum"):  # fmt: skip
        runner(module).step([batch(model, prepared[0], range(8))], 4)


def test_cached_mnrl_equals_mnrl_in_loss_and_gradients(tiny_dirs):
    model, prepared, module = setup(tiny_dirs["bert"], "cached-mnrl", mini_batch=3)
    plain = TrainModule(model, [MultipleNegativesRankingLoss()])
    module.eval()
    b = batch(model, prepared[0], range(8))
    cached_grads, plain_grads = grads_of(module, [b]), grads_of(plain, [b])
    for name, grad in plain_grads.items():
        torch.testing.assert_close(cached_grads[name], grad, atol=1e-6, rtol=1e-4)


def test_cached_mnrl_replays_the_same_dropout_masks(tiny_dirs):
    model, prepared, module = setup(tiny_dirs["bert"], "cached-mnrl", mini_batch=8)
    plain = TrainModule(model, [MultipleNegativesRankingLoss()])
    module.train()
    b = batch(model, prepared[0], range(8))
    torch.manual_seed(3)
    cached_loss = module(0, b.columns, b.labels)
    torch.manual_seed(3)
    plain_loss = plain(0, b.columns, b.labels)
    assert abs(float(cached_loss.detach()) - float(plain_loss.detach())) < 1e-6
    torch.manual_seed(3)
    cached_grads = grads_of(module, [b])
    torch.manual_seed(3)
    for name, grad in grads_of(plain, [b]).items():
        torch.testing.assert_close(cached_grads[name], grad, atol=1e-6, rtol=1e-4)


def test_cached_mnrl_is_an_objective_with_a_checked_option():
    loss = build_loss("cached-mnrl", 32, PAIRS, {"mini_batch": 4})
    assert isinstance(loss, CachedMultipleNegativesRankingLoss) and loss.mini_batch == 4
    with pytest.raises(Exception, match="mini_batch=0"):
        build_loss("cached-mnrl", 32, PAIRS, {"mini_batch": 0})


def test_a_fused_optimizer_checkpoint_resumes_in_a_plain_one_and_back(tiny_dirs):
    model, prepared, module = setup(tiny_dirs["bert"])
    fused = build_optimizer(module, 1e-3, 0.01, fused=True)  # what a CUDA run writes
    runner(module, fused).step([batch(model, prepared[0], range(8))], 1)
    state = fused.state_dict()
    plain = build_optimizer(module, 1e-3, 0.01)
    plain.load_state_dict(state)
    retarget_optimizer(plain, fused=False)
    assert all(g["fused"] is None for g in plain.param_groups)
    runner(module, plain).step([batch(model, prepared[0], range(8))], 2)
    steps = {float(s["step"]) for s in plain.state.values()}
    assert steps == {2.0}
    back = build_optimizer(module, 1e-3, 0.01, fused=True)
    back.load_state_dict(plain.state_dict())
    retarget_optimizer(back, fused=True)
    runner(module, back).step([batch(model, prepared[0], range(8))], 3)
    assert {float(s["step"]) for s in back.state.values()} == {3.0}
