"""Length-grouped batches, the round-robin epoch plan and the learning-rate schedule."""

import itertools

import numpy as np
import pytest

from sbert.training.epoch_plan import epoch_plan, length_grouped_batches
from sbert.training.schedule import warmup_linear, warmup_steps

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
