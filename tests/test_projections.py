"""The lean forward's projections (backends/projections.py): a Linear's output, its activation and residual."""

from __future__ import annotations

import pytest
import torch
from transformers.activations import ACT2FN

from sbert.backends.projections import MATMUL_ENV, LinearProjection, OneDnnProjection, onednn_usable, projection

needs_onednn = pytest.mark.skipif(not onednn_usable(torch.float32), reason="this torch build has no oneDNN linear")


def linear_case(rows: int = 13, n_in: int = 24, n_out: int = 40) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rows, an (out, in) weight and a bias of a Linear's scale."""
    gen = torch.Generator().manual_seed(rows)
    weight = torch.randn(n_out, n_in, generator=gen) * n_in**-0.5
    return torch.randn(rows, n_in, generator=gen), weight, torch.randn(n_out, generator=gen)


@needs_onednn
@pytest.mark.parametrize("rows", [1, 13, 200])
def test_onednn_projection_is_the_linear(rows):
    x, weight, bias = linear_case(rows)
    p = projection(weight, bias)
    assert isinstance(p, OneDnnProjection)
    with torch.inference_mode():
        want = torch.nn.functional.linear(x, weight, bias)
        residual = torch.randn_like(want)
        assert torch.allclose(p(x), want, atol=1e-5)
        assert torch.allclose(p(x, residual), want + residual, atol=1e-5)


@needs_onednn
@pytest.mark.parametrize("name", ["gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu"])
def test_an_activation_runs_in_the_onednn_call_or_after_it(name):
    # gelu is erf's, gelu_new and gelu_pytorch_tanh the tanh approximation: each must be transformers' own
    x, weight, bias = linear_case()
    activation = ACT2FN[name]
    p = projection(weight, bias, activation, name)
    assert isinstance(p, OneDnnProjection)
    assert (p.activation is None) == (name != "silu")  # silu: oneDNN is not told, it runs after
    with torch.inference_mode():
        assert torch.allclose(p(x), activation(torch.nn.functional.linear(x, weight, bias)), atol=1e-5)


def test_torch_linear_on_request_and_for_half_precision_weights(monkeypatch):
    x, weight, bias = linear_case()
    assert isinstance(projection(weight.bfloat16(), bias.bfloat16()), LinearProjection)
    monkeypatch.setenv(MATMUL_ENV, "linear")
    p = projection(weight, bias, torch.tanh, "tanh")
    assert isinstance(p, LinearProjection)
    with torch.inference_mode():
        want = torch.tanh(torch.nn.functional.linear(x, weight, bias))
        assert torch.equal(p(x), want)
        assert torch.equal(p(x, want), want + want)


def test_onednn_only_on_x86(monkeypatch):
    monkeypatch.setattr("platform.machine", lambda: "aarch64")
    assert not onednn_usable(torch.float32)
