"""AdaptiveLayerLoss / Matryoshka2dLoss on sbert's own model: the formula, the draws, the refusals.

The values against sentence-transformers 6.2's are in tests/test_st_training.py (adaptive-layer, matryoshka-2d).
"""

from __future__ import annotations

import math
import random

import pytest
import torch
from torch.nn import functional

from sbert import SentenceEncoder
from sbert.errors import SbertError
from sbert.losses import AdaptiveLayerLoss, CachedMultipleNegativesRankingLoss, CoSENTLoss, Matryoshka2dLoss
from tests.tiny_models import CORPUS


@pytest.fixture
def batch(tiny_dirs):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    columns = [model.tokenize(CORPUS[:4]), model.tokenize(CORPUS[4:8])]
    return model, columns, torch.tensor([0.1, 0.9, 0.4, 0.6])


def layer_vectors(model, features, layer):
    """A column's sentence vectors from hidden state `layer` through the pooling: computed here by hand."""
    hidden = model.input_module.auto_model(**features, output_hidden_states=True).hidden_states[layer]
    mask = features["attention_mask"].unsqueeze(-1).float()
    return (hidden * mask).sum(1) / mask.sum(1)


def test_the_loss_is_the_last_layers_plus_each_earlier_layers_and_their_kl(batch):
    model, columns, labels = batch
    inner = CoSENTLoss()
    loss = AdaptiveLayerLoss(model, inner, n_layers_per_step=-1, prior_layers_weight=0.5, layer_weighting="log")
    got = loss.forward_model(model, [dict(c) for c in columns], labels)
    layers = model.input_module.auto_model.config.num_hidden_layers
    last = [layer_vectors(model, c, layers) for c in columns]
    target = functional.softmax(torch.cat(last) / 0.3, dim=-1)
    want = inner(last, labels)
    for layer in range(layers):  # the embedding output (0) up to the layer before the last
        vectors = [layer_vectors(model, c, layer) for c in columns]
        want = want + inner(vectors, labels) * 0.5 / (1 + math.log(1 + layer)) / layers
        drawn = functional.log_softmax(torch.cat(vectors) / 0.3, dim=-1)
        want = want + functional.kl_div(drawn, target, reduction="batchmean") * 0.3
    assert float(got.detach()) == pytest.approx(float(want.detach()), rel=1e-5)
    got.backward()
    assert model.input_module.auto_model.embeddings.word_embeddings.weight.grad is not None


def test_layers_are_drawn_per_step_from_pythons_seeded_random(batch):
    model, columns, labels = batch
    loss = Matryoshka2dLoss(model, CoSENTLoss(), [32, 16], n_layers_per_step=1)
    draws = []
    for _ in range(2):
        random.seed(3)
        draws.append([loss.step_layers(5) for _ in range(20)])
    assert draws[0] == draws[1] and {tuple(d) for d in draws[0]} == {(0,), (1,), (2,), (3,)}  # never the last (4)
    random.seed(3)
    first = float(loss.forward_model(model, [dict(c) for c in columns], labels).detach())
    random.seed(3)
    assert float(loss.forward_model(model, [dict(c) for c in columns], labels)) == pytest.approx(first, rel=1e-6)
    assert loss.get_config_dict()["matryoshka_dims"] == [32, 16]


def test_bad_settings_are_refused_in_one_line(batch):
    model = batch[0]
    with pytest.raises(ValueError, match="layer_weighting must be"):
        AdaptiveLayerLoss(model, CoSENTLoss(), layer_weighting="cubic")
    with pytest.raises(SbertError, match="cannot wrap CachedMultipleNegativesRankingLoss"):
        AdaptiveLayerLoss(model, CachedMultipleNegativesRankingLoss(model, mini_batch_size=2))
    assert AdaptiveLayerLoss(model, CoSENTLoss(), layer_weighting=lambda i: 2.0**-i).get_layer_weight(3) == 0.125
