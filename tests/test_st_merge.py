"""`Model.merge`: linear, task arithmetic and SLERP over fine-tunes of one model, by the methods' definitions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import sbert
from sbert.errors import SbertError
from tests.st_training_fixtures import tiny_cross_encoder_folder, tiny_st_folder

st = pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """The base folder and two 'fine-tunes' of it: every float weight moved by its own noise."""
    base_dir = tiny_st_folder(tmp_path_factory.mktemp("merge"))
    folders = [base_dir]
    for seed in (1, 2):
        model = sbert.SentenceTransformer(str(base_dir), device="cpu")
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.05 * torch.randn(p.shape, generator=gen))
        folders.append(base_dir.parent / f"tuned{seed}")
        model.save(str(folders[-1]))
    return folders


def params(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items() if v.is_floating_point()}


def test_linear_merge_is_the_weighted_mean_and_loads_in_sentence_transformers(tuned, tmp_path):
    a, b = (params(sbert.SentenceTransformer(str(f), device="cpu")) for f in tuned[1:])
    merged = sbert.SentenceTransformer.merge([str(tuned[1]), str(tuned[2])], parameters={"weight": [3, 1]})
    assert isinstance(merged, sbert.SentenceTransformer)
    for name, value in params(merged).items():
        torch.testing.assert_close(value, (3 * a[name] + b[name]) / 4, atol=1e-6, rtol=0)
    absolute = sbert.SentenceTransformer.merge([str(tuned[1]), str(tuned[2])],
                                               parameters={"weight": [0.5, 0.25], "normalize": False})  # fmt: skip
    name = next(iter(a))
    torch.testing.assert_close(params(absolute)[name], 0.5 * a[name] + 0.25 * b[name], atol=1e-6, rtol=0)
    merged.save(str(tmp_path / "soup"))
    texts = ["a merged model", "still one model"]
    np.testing.assert_allclose(st.SentenceTransformer(str(tmp_path / "soup"), device="cpu").encode(texts),
                               merged.encode(texts), atol=1e-5)  # fmt: skip


def test_task_arithmetic_adds_each_tuned_delta_to_the_base(tuned):
    base, a, b = (params(sbert.SentenceTransformer(str(f), device="cpu")) for f in tuned)
    merged = sbert.SentenceTransformer.merge([str(tuned[0]), str(tuned[1]), str(tuned[2])], "task_arithmetic",
                                             base_model=str(tuned[0]), parameters={"weight": [0.5, 1.0]})  # fmt: skip
    for name, value in params(merged).items():
        want = base[name] + 0.5 * (a[name] - base[name]) + (b[name] - base[name])
        torch.testing.assert_close(value, want, atol=1e-5, rtol=0)


def test_slerp_runs_from_the_first_model_to_the_second(tuned):
    a, b = (params(sbert.SentenceTransformer(str(f), device="cpu")) for f in tuned[1:])
    ends = [params(sbert.SentenceTransformer.merge([str(tuned[1]), str(tuned[2])], "slerp", parameters={"t": t}))
            for t in (0.0, 1.0, 0.5)]  # fmt: skip
    name = next(n for n in a if a[n].numel() > 100)
    torch.testing.assert_close(ends[0][name], a[name], atol=1e-5, rtol=0)
    torch.testing.assert_close(ends[1][name], b[name], atol=1e-5, rtol=0)
    # Halfway: sin(w/2) (a + b) / sin(w) = (a + b) / (2 cos(w/2)), w the angle between the two tensors.
    omega = torch.arccos(torch.nn.functional.cosine_similarity(a[name].flatten(), b[name].flatten(), dim=0))
    torch.testing.assert_close(ends[2][name], (a[name] + b[name]) / (2 * torch.cos(omega / 2)), atol=1e-5, rtol=1e-5)


def test_merge_refuses_what_it_does_not_do(tuned, tmp_path):
    with pytest.raises(SbertError, match="merge method 'ties': sbert merges with linear, task_arithmetic, slerp"):
        sbert.SentenceTransformer.merge([str(tuned[1]), str(tuned[2])], "ties")
    with pytest.raises(SbertError, match="needs base_model"):
        sbert.SentenceTransformer.merge([str(tuned[1]), str(tuned[2])], "task_arithmetic")
    with pytest.raises(SbertError, match="2 weights for 3 models"):
        sbert.SentenceTransformer.merge([str(f) for f in tuned], parameters={"weight": [1, 2]})
    other = sbert.CrossEncoder(str(tiny_cross_encoder_folder(tmp_path, 1)), device="cpu")
    with pytest.raises(SbertError, match="does not match model 0"):
        sbert.CrossEncoder.merge([other, sbert.CrossEncoder(str(tiny_cross_encoder_folder(tmp_path / "3", 3)),
                                                            device="cpu")])  # fmt: skip
    soup = sbert.CrossEncoder.merge([other, other])  # a cross-encoder merges the same way
    pairs = [("a query", "a document")]
    np.testing.assert_allclose(soup.predict(pairs), other.predict(pairs), atol=1e-6)
