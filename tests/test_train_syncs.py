"""Issue 55, item 4, on the CPU: a training step on the path CUDA takes (deferred non-finite guard, fused AdamW,
fused columns, batches made by the trainer's prefetch thread) reads nothing back from the device, so the host can
queue the next step while the GPU runs this one. Counted with sbert/host_reads.py (every aten op that returns a
value to the host); before the ready key masks (Transformer.key_mask), transformers' own `mask.all()` made one
read per forward (four per cached-MNRL step)."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from sbert.host_reads import HostReads
from sbert.modules.transformer import BACKBONE_MASK
from sbert.training.prefetch import make_batch, with_key_masks
from sbert.training.step import build_optimizer
from tests.test_train_step import grads_of, runner, setup


def trainer_batch(model, prepared, rows, ready=True):
    """A micro-batch as Trainer._make builds it on CUDA: every column in one forward, with its ready key mask."""
    made = make_batch([model.transformer.pad] * len(prepared.columns), prepared.columns, prepared.labels, 0, rows,
                      fuse=True)  # fmt: skip
    return with_key_masks(made, model.input_module) if ready else made


@pytest.mark.parametrize("family", ["bert", "roberta", "albert"])
@pytest.mark.parametrize("objective", ["regression", "mnrl", "cosent", "cached-mnrl"])
def test_a_deferred_training_step_reads_nothing_back_from_the_device(tiny_dirs, family, objective):
    model, prepared, module = setup(tiny_dirs[family], objective)
    step = runner(module, build_optimizer(module, 1e-3, 0.01, fused=True), deferred=True)
    ready = trainer_batch(model, prepared[0], range(8))
    assert BACKBONE_MASK in ready.columns[0]  # the tiny batch is padded: the mask is built on the host
    step.step([ready], 1)  # warm-up: first-call work is not the steady state
    with HostReads() as reads:
        step.step([ready], 2)
    assert reads.total == 0, dict(reads.where)
    with HostReads() as reads:  # the test can fail: transformers' own mask handling reads the device
        step.step([trainer_batch(model, prepared[0], range(8), ready=False)], 3)
    assert reads.total >= 1


@pytest.mark.parametrize("family", ["bert", "roberta", "albert"])
def test_the_ready_key_mask_gives_the_same_loss_gradients(tiny_dirs, family):
    model, prepared, module = setup(tiny_dirs[family], "mnrl")
    module.eval()  # no dropout: the two steps must see the same network
    mine = grads_of(module, [trainer_batch(model, prepared[0], range(8))])
    theirs = grads_of(module, [trainer_batch(model, prepared[0], range(8), ready=False)])
    assert mine.keys() == theirs.keys() and len(mine) > 10
    for name, grad in mine.items():
        torch.testing.assert_close(grad, theirs[name], rtol=1e-5, atol=1e-7, msg=name)


def test_no_ready_mask_for_an_unpadded_batch_or_a_family_that_builds_its_own(tiny_dirs):
    model, _, _ = setup(tiny_dirs["bert"], "mnrl")
    backbone = model.input_module
    assert backbone.key_mask(torch.ones(2, 5, dtype=torch.long)) is None  # transformers then drops the mask itself
    padded = torch.tensor([[1, 1, 0], [1, 1, 1]])
    assert backbone.key_mask(padded).shape == (2, 1, 1, 3)
    backbone.auto_model.config._attn_implementation = "eager"  # an additive mask there: transformers builds it
    try:
        assert backbone.key_mask(padded) is None
    finally:
        backbone.auto_model.config._attn_implementation = "sdpa"


class WeightCasts(TorchDispatchMode):
    """Counts the dtype casts whose source is one of `params` (autocast's low-precision weight copies)."""

    # Autocast caches the casts of trainable leaf weights only; a frozen one (BERT's unused pooler) is cast
    # at every forward by design, so it is not counted.

    def __init__(self, params) -> None:
        super().__init__()
        self.pointers = {p.data_ptr() for p in params}
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._to_copy.default and args[0].data_ptr() in self.pointers:
            self.count += 1
        return func(*args, **(kwargs or {}))


def bf16_step_weight_casts(tiny_dir, objective, **options):
    """Weight casts of one steady bf16-autocast step, and the gradients it left."""
    model, prepared, module = setup(tiny_dir, objective, **options)
    module.eval()  # no dropout: the cached and plain losses see the same network
    step = runner(module, lr=0.0)
    step.dtype = torch.bfloat16
    ready = trainer_batch(model, prepared[0], range(8))
    step.step([ready], 1)
    module.zero_grad()
    with WeightCasts([p for p in module.parameters() if p.requires_grad]) as casts:
        step.step([ready], 2)
    return casts.count, {n: p.grad.clone() for n, p in module.named_parameters() if p.grad is not None}


def test_a_cached_mnrl_step_casts_each_weight_once_per_pass_however_many_mini_batches(tiny_dirs):
    # The replay keeps one autocast region open over every mini-batch, so autocast's weight cache lives
    # through it: 2 mini-batches per column cast no more than 1 does (before: one set of casts per mini-batch).
    one, _ = bf16_step_weight_casts(tiny_dirs["bert"], "cached-mnrl", mini_batch=8)
    four, cached = bf16_step_weight_casts(tiny_dirs["bert"], "cached-mnrl", mini_batch=2)
    plain, plain_grads = bf16_step_weight_casts(tiny_dirs["bert"], "mnrl")
    assert plain > 10 and one == four == 2 * plain  # the embedding pass and the replay: one set of casts each
    for name, grad in plain_grads.items():  # backward with autocast paused inside the region: the same gradients
        torch.testing.assert_close(cached[name], grad, rtol=0.05, atol=2e-3, msg=name)
