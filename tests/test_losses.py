"""Each objective against a direct computation of its formula on a hand-made batch."""

import math

import pytest
import torch

from sbert.data.common import NLI_LABELS, Dataset
from sbert.errors import SbertError
from sbert.losses import build_loss
from sbert.losses.cosent import CoSENTLoss
from sbert.losses.cosine import CosineSimilarityLoss
from sbert.losses.mnrl import MultipleNegativesRankingLoss
from sbert.losses.softmax import SoftmaxLoss
from sbert.losses.triplet import TripletLoss

torch.manual_seed(0)
U, V, W = torch.randn(4, 6), torch.randn(4, 6), torch.randn(4, 6)


def cos(a, b):
    return float((a @ b) / (a.norm() * b.norm()))


PAPER_CONCATS = {
    "u,v": 2,
    "|u-v|": 1,
    "u*v": 1,
    "|u-v|,u*v": 2,
    "u,v,u*v": 3,
    "u,v,|u-v|": 3,
    "u,v,|u-v|,u*v": 4,
}


@pytest.mark.parametrize("concat,parts", sorted(PAPER_CONCATS.items()))
def test_softmax_concat_modes_of_the_paper(concat, parts):
    loss = SoftmaxLoss(embedding_dimension=6, num_labels=3, concat=concat)
    assert loss.classifier.in_features == parts * 6
    labels = torch.tensor([0, 1, 2, 1])
    logits = loss.logits(U, V).detach()
    manual = -sum(math.log(torch.softmax(logits[i], 0)[labels[i]]) for i in range(4)) / 4
    assert float(loss([U, V], labels.float())) == pytest.approx(manual, rel=1e-5)


def test_softmax_default_is_u_v_abs_diff():
    loss = SoftmaxLoss(embedding_dimension=6, num_labels=3)
    x = torch.cat([U, V, (U - V).abs()], dim=1)
    torch.testing.assert_close(loss.logits(U, V), loss.classifier(x))


def test_softmax_rejects_unknown_parts():
    with pytest.raises(ValueError, match="parts must be among"):
        SoftmaxLoss(embedding_dimension=6, num_labels=3, concat="u,u+v")


def test_regression_is_mse_of_cosine():
    y = torch.tensor([0.0, 0.5, 1.0, 0.2])
    manual = sum((cos(U[i], V[i]) - float(y[i])) ** 2 for i in range(4)) / 4
    assert float(CosineSimilarityLoss()([U, V], y)) == pytest.approx(manual, rel=1e-5)


@pytest.mark.parametrize(
    "distance,fn",
    [
        ("euclidean", lambda a, b: float((a - b).norm())),
        ("manhattan", lambda a, b: float((a - b).abs().sum())),
        ("cosine", lambda a, b: 1 - cos(a, b)),
    ],
)
def test_triplet_hinge(distance, fn):
    loss = TripletLoss(distance=distance, margin=1.0)
    manual = sum(max(fn(U[i], V[i]) - fn(U[i], W[i]) + 1.0, 0) for i in range(4)) / 4
    assert float(loss([U, V, W], None)) == pytest.approx(manual, rel=1e-5)


def test_triplet_defaults_paper_by_name_reference_by_class():
    from sbert.data.common import Dataset
    from sbert.losses import build_loss

    triplets = Dataset("t", "triplet", [("a", "b", "c")])
    named = build_loss("triplet", 8, triplets)  # `sbert train --objective triplet`: the paper's eps = 1
    assert named.margin == 1.0 and named.distance.__name__ == "euclidean"  # the paper's, by the registry's option
    assert TripletLoss().margin == 5.0  # the class as sentence-transformers defines it


def test_mnrl_with_hard_negatives():
    scale = 20.0
    candidates = torch.cat([V, W])
    manual = 0.0
    for i in range(4):
        scores = [scale * cos(U[i], c) for c in candidates]
        manual += -(scores[i] - math.log(sum(math.exp(s) for s in scores)))
    assert float(MultipleNegativesRankingLoss()([U, V, W], None)) == pytest.approx(manual / 4, rel=1e-5)


def test_cosent_matches_double_sum():
    y = torch.tensor([0.9, 0.1, 0.5, 0.5])
    c = [cos(U[i], V[i]) for i in range(4)]
    terms = [math.exp(20 * (c[k] - c[i])) for i in range(4) for k in range(4) if y[i] > y[k]]
    manual = math.log(1 + sum(terms))
    assert float(CoSENTLoss()([U, V], y)) == pytest.approx(manual, rel=1e-5)


def pair_class(labels):
    return Dataset("t", "pair-class", [("a", "b")] * len(labels), labels, NLI_LABELS)


def test_build_loss_errors():
    with pytest.raises(SbertError, match="unknown objective 'magic'; known: classification"):
        build_loss("magic", 8, pair_class([0.0]))
    with pytest.raises(SbertError, match="needs pair-score data"):
        build_loss("regression", 8, pair_class([0.0]))
    with pytest.raises(SbertError, match=r"class labels must be integers in \[0, 3\)"):
        build_loss("classification", 8, pair_class([0.0, 5.0]))
    with pytest.raises(SbertError, match="bad option"):
        build_loss("classification", 8, pair_class([0.0]), {"margin": 2})
