"""Packed attention on the CPU, one padded grid per bucket of like-length sequences."""

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.backends import grid_buckets, varlen
from sbert.backends.grid_buckets import BUCKET_RATIO, MAX_BUCKETS, grid_width, length_groups, plan_buckets
from sbert.backends.torch_cpu import TorchCpuBackend


def cumulative(lengths: list[int]) -> torch.Tensor:
    return torch.tensor([0, *np.cumsum(lengths).tolist()], dtype=torch.int32)


def test_sequences_are_cut_into_buckets_where_a_length_falls_under_the_ratio():
    lengths = np.array([40, 6, 38, 12, 30, 11, 5])
    groups = [g.tolist() for g in length_groups(lengths)]
    assert BUCKET_RATIO == 0.75  # 30 = 0.75 x 40 stays with 40; 12 < 22.5 starts a bucket, 6 < 9 another
    assert groups == [[0, 2, 4], [3, 5], [1, 6]]
    falling = np.array([100, 70, 49, 34, 24, 17, 12])  # each under 0.75 of the one before
    capped = length_groups(falling)
    assert len(capped) == MAX_BUCKETS and capped[-1].tolist() == [3, 4, 5, 6]


@pytest.mark.parametrize("heads_first", [False, True])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("lengths", [[40, 38, 30, 12, 11, 6, 5, 1], [6, 40, 1, 12, 38, 5, 30, 11], [7, 7, 7]])
def test_bucketed_attention_equals_per_sentence_attention(lengths, causal, heads_first):
    gen = torch.Generator().manual_seed(3)
    cu = cumulative(lengths)
    if heads_first:  # a decoder's q and k after rotary positions: (heads, N, d) in memory, seen as (N, heads, d)
        q, k, v = (torch.randn(2, sum(lengths), 8, generator=gen).transpose(0, 1) for _ in range(3))
    else:  # an encoder's: the linear layer's (N, heads * d) output split into heads
        q, k, v = (torch.randn(sum(lengths), 2, 8, generator=gen) for _ in range(3))
    want = varlen.reference_attention(q, k, v, cu, max(lengths), min(lengths), None, causal)
    got = varlen.grid_sdpa(q, k, v, cu, max(lengths), min(lengths), None, causal)
    assert (got - want).abs().max() <= 1e-5
    one_grid = varlen.one_grid_sdpa(q, k, v, cu, max(lengths), None, causal)  # the path off the CPU
    assert (one_grid - want).abs().max() <= 1e-5
    buckets = plan_buckets(cu, causal)
    assert sorted(t for b in buckets for t in b.tokens.tolist()) == list(range(sum(lengths)))  # each token once
    sorted_longest_first = lengths == sorted(lengths, reverse=True)
    assert all((b.start is not None) == sorted_longest_first for b in buckets if b.rows > 1)  # sliced, not gathered
    # keys masked only where needed: a row shorter than its grid (the CPU's vector may widen a grid: grid_width)
    full = len(set(lengths)) == 1 and grid_width(lengths[0]) == lengths[0]
    assert all(b.mask is None for b in buckets) == (causal or full)
    # a bucket of rows end to end with no padding is a view of the packed rows; any other is one gather
    assert all((b.fill is None) == (b.start is not None and b.rows * b.width == len(b.tokens)) for b in buckets)
    assert all(b.fill is None for b in buckets) == (lengths == [7, 7, 7] and full)  # equal lengths: no gather at all


@pytest.mark.parametrize(
    ("rule", "longest", "width"),
    [(None, 15, 15), ((16, 10), 9, 9), ((16, 10), 10, 16), ((16, 10), 15, 16), ((16, 10), 16, 16),
     ((16, 10), 17, 17), ((16, 10), 27, 32), ((8, 6), 13, 13), ((8, 6), 14, 16), ((8, 6), 23, 24)],
)  # fmt: skip
def test_a_grid_just_short_of_the_cpus_vector_is_widened_to_it(monkeypatch, rule, longest, width):
    """A remainder of at least the rule's share of a vector pads up to it; the pad cells change no vector."""
    monkeypatch.setattr(grid_buckets, "vector_rule", lambda: rule)
    assert grid_width(longest) == width
    lengths = [longest, longest, longest - 1]  # one bucket (within BUCKET_RATIO); the short row keeps a key mask
    cu = cumulative(lengths)
    (bucket,) = plan_buckets(cu, False)
    assert bucket.width == width and bucket.mask is not None
    assert bucket.mask.reshape(3, width).sum(dim=1).tolist() == lengths  # only each row's real keys attended to
    gen = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(sum(lengths), 2, 8, generator=gen) for _ in range(3))
    for causal in (False, True):
        want = varlen.reference_attention(q, k, v, cu, longest, longest - 1, None, causal)
        assert (varlen.grid_sdpa(q, k, v, cu, longest, longest - 1, None, causal) - want).abs().max() <= 1e-5


def test_bucketed_attention_carries_gradients():
    lengths = [9, 8, 3, 2]  # sorted longest first: buckets are sliced and gathered straight into place
    cu = cumulative(lengths)
    gen = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(sum(lengths), 2, 8, generator=gen, requires_grad=True) for _ in range(3))
    varlen.grid_sdpa(q, k, v, cu, 9, 2, None, False).square().sum().backward()
    got = [x.grad.clone() for x in (q, k, v)]
    for x in (q, k, v):
        x.grad = None
    varlen.reference_attention(q, k, v, cu, 9, 2, None, False).square().sum().backward()
    assert all((a - x.grad).abs().max() <= 1e-5 for a, x in zip(got, (q, k, v), strict=True))


def test_a_batch_is_planned_once_for_all_its_layers(tiny_dirs, monkeypatch):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    backend = TorchCpuBackend(model.as_chain(), torch.device("cpu"))
    assert backend.packed_modules() is not None  # switched now: picking the kernel runs it once on a probe
    plans = []

    def counted(cu: torch.Tensor, causal: bool) -> list[grid_buckets.Bucket]:
        plans.append(cu)
        return plan_buckets(cu, causal)

    monkeypatch.setattr(grid_buckets, "plan_buckets", counted)
    rows = [list(range(3, 3 + n)) for n in (30, 4, 22, 3, 9)]  # mostly padding: runs packed
    got = backend.embed(rows)
    assert len(plans) == 1 and model.transformer.auto_model.config.num_hidden_layers > 1
    backend.embed(rows)
    assert len(plans) == 2  # a new batch (a new cu tensor) is planned anew
    alone = np.concatenate([backend.embed([r]) for r in rows])  # each row on its own: no neighbours, no padding
    assert np.abs(got - alone).max() <= 1e-5
