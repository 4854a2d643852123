"""Length-grouped batches, the round-robin epoch plan and the learning-rate schedule."""

import itertools

import numpy as np
import pytest
import torch

from sbert.training.epoch_plan import epoch_plan, length_grouped_batches
from sbert.training.schedule import SCHEDULES, lr_factor, warmup_linear, warmup_steps

LENGTHS = np.random.default_rng(0).integers(5, 60, size=1000).tolist()


def padded_tokens(batches, lengths):
    return sum(len(b) * max(lengths[i] for i in b) for b in batches)


def test_every_example_once_per_epoch():
    batches = length_grouped_batches(LENGTHS, 16, np.random.default_rng(1))
    assert sorted(i for b in batches for i in b) == list(range(1000))


def test_grouping_cuts_padding_but_keeps_order_random():
    grouped = length_grouped_batches(LENGTHS, 16, np.random.default_rng(1))
    plain = length_grouped_batches(LENGTHS, 16, np.random.default_rng(1), group=1)
    assert padded_tokens(grouped, LENGTHS) < 0.8 * padded_tokens(plain, LENGTHS)
    firsts = [max(LENGTHS[i] for i in b) for b in grouped[:10]]
    assert firsts != sorted(firsts, reverse=True)  # batch order is shuffled, not longest-first


def test_plan_interleaves_objectives_and_replays_for_the_same_epoch():
    lengths = [LENGTHS[:64], LENGTHS[:32]]
    plan = epoch_plan(lengths, 16, seed=0, stage=0, epoch=0)
    assert [obj for obj, _ in plan] == [0, 1, 0, 1, 0, 0]
    assert plan == epoch_plan(lengths, 16, seed=0, stage=0, epoch=0)
    assert plan != epoch_plan(lengths, 16, seed=0, stage=0, epoch=1)
    for obj, n in ((0, 64), (1, 32)):
        assert sorted(i for o, b in plan if o == obj for i in b) == list(range(n))


def test_warmup_then_linear_decay():
    total = 100
    warm = warmup_steps(total, 0.1)
    factor = warmup_linear(total, warm)
    assert warm == 10
    values = [factor(s) for s in range(total)]
    assert values[0] == 0.0 and values[5] == pytest.approx(0.5) and max(values) == pytest.approx(1.0)
    assert all(a < b for a, b in itertools.pairwise(values[:11]))  # rising through the warm-up
    assert all(a >= b for a, b in itertools.pairwise(values[10:]))  # then falling
    assert factor(total) == 0.0


@pytest.mark.parametrize("tokens", [0, 400])
def test_in_batch_negative_batches_hold_no_text_twice(tokens):
    # NLI triplets repeat each premise for every (entailed, contradicting) pair: duplicates abound.
    from sbert.data import load_dataset
    from sbert.training.setup import text_ids
    from tests.conftest import SHARED_DATA

    data = load_dataset(f"nli-triplets:{SHARED_DATA / 'snli'}:dev")
    data = data.subset(list(range(2000)), "d")
    texts = text_ids(data)
    lengths = [len(" ".join(t).split()) for t in data.texts]
    plain = length_grouped_batches(lengths, 32, np.random.default_rng(3), tokens=tokens)
    assert any(len(set().union(*(texts[i] for i in b))) < sum(len(texts[i]) for i in b) for b in plain)
    batches = length_grouped_batches(lengths, 32, np.random.default_rng(3), tokens=tokens, texts=texts)
    assert sorted(i for b in batches for i in b) == list(range(len(data)))
    for b in batches:
        assert len(set().union(*(texts[i] for i in b))) == sum(len(texts[i]) for i in b)  # all distinct
        assert (len(b) <= 32) if not tokens else (len(b) == 1 or len(b) * max(lengths[i] for i in b) <= tokens)
    assert len(batches) <= 1.25 * len(plain)  # clashing examples wait, they do not get batches of their own
    plan = epoch_plan([lengths], 32, 0, 0, 0, tokens=tokens, texts=[texts])
    assert plan == epoch_plan([lengths], 32, 0, 0, 0, tokens=tokens, texts=[texts])  # a resume replays it


def test_proportional_sampling_follows_set_sizes_and_runs_every_batch_once():
    sizes = [LENGTHS[:800], LENGTHS[800:1000]]  # 50 and 13 batches of 16
    plan = epoch_plan(sizes, 16, seed=3, stage=0, epoch=0, sampling="proportional")
    robin = epoch_plan(sizes, 16, seed=3, stage=0, epoch=0)
    for got in (plan, robin):
        for obj, lengths in enumerate(sizes):
            assert sorted(i for o, b in got if o == obj for i in b) == list(range(len(lengths)))

    # In the first half of the epoch the small set's share is near its 13/63, where round-robin gives it 1/2.
    def small_share(p):
        return sum(o == 1 for o, _ in p[: len(p) // 2]) / (len(p) // 2)

    assert abs(small_share(plan) - 13 / 63) < 0.12 and small_share(robin) > 0.4
    assert plan == epoch_plan(sizes, 16, seed=3, stage=0, epoch=0, sampling="proportional")
    assert plan != epoch_plan(sizes, 16, seed=3, stage=0, epoch=1, sampling="proportional")
    with pytest.raises(ValueError, match="sampling='random'"):
        epoch_plan(sizes, 16, seed=3, stage=0, epoch=0, sampling="random")


@pytest.mark.parametrize("name", SCHEDULES)
def test_each_schedule_is_transformers_own_curve(name):
    import transformers

    make = {"linear": transformers.get_linear_schedule_with_warmup,
            "constant_with_warmup": transformers.get_constant_schedule_with_warmup,
            "cosine": transformers.get_cosine_schedule_with_warmup}  # fmt: skip
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    if name == "constant":
        theirs = transformers.get_constant_schedule(optimizer)
    elif name == "constant_with_warmup":
        theirs = make[name](optimizer, num_warmup_steps=3)
    else:
        theirs = make[name](optimizer, num_warmup_steps=3, num_training_steps=11)
    ours = lr_factor(name, 11, 3)
    assert [ours(step) for step in range(12)] == pytest.approx([theirs.lr_lambdas[0](step) for step in range(12)])
    with pytest.raises(ValueError, match="known: linear"):
        lr_factor("polynomial", 11, 3)
