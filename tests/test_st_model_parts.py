"""6.2 and 6.3's calls on the model's parts (Hugging Face model, config, tokens, pools) on three drop-in classes.

Each is asked of sbert's class and of the installed sentence-transformers' on the same tiny folder, same process.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import sbert
from tests.st_training_fixtures import kind_folders

st = pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return kind_folders(tmp_path_factory.mktemp("parts"))


def pair(folders, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        folder = str(folders[name])
        return getattr(sbert, name)(folder, device="cpu"), getattr(st, name)(folder, device="cpu")


@pytest.mark.parametrize("name", ["SentenceTransformer", "SparseEncoder", "CrossEncoder"])
def test_parts_answer_as_6_2(folders, name):
    ours, theirs = pair(folders, name)
    assert type(ours.transformers_model) is type(theirs.transformers_model)
    # 6.2's cross-encoder turns the KV cache off on its config; scores do not depend on it.
    assert {**ours.config.to_dict(), "use_cache": 0} == {**theirs.config.to_dict(), "use_cache": 0}
    assert type(ours.processor) is type(theirs.processor)
    assert ours.get_model_kwargs() == theirs.get_model_kwargs()
    inputs = [("a query", "a document"), ("q", "d two")] if name == "CrossEncoder" else ["one text", "two texts here"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for prompt in (None, "query: "):
            got, want = ours.preprocess(inputs, prompt=prompt), theirs.preprocess(inputs, prompt=prompt)
            assert set(got) == set(want), prompt
            for key, value in want.items():
                assert torch.equal(got[key], value) if torch.is_tensor(value) else got[key] == value, key
        assert torch.equal(ours.tokenize(inputs)["input_ids"], theirs.tokenize(inputs)["input_ids"])
    single = inputs[0]
    assert ours.is_singular_input(single) == theirs.is_singular_input(single) is True
    assert ours.is_singular_input(inputs) == theirs.is_singular_input(inputs) is False
    ours.gradient_checkpointing_enable()
    assert ours.transformers_model.is_activation_checkpointing
    ours.transformers_model.activation_checkpointing_disable()
    ours.activation_checkpointing_enable({"use_reentrant": False})  # 6.3's name, its kwargs passed through
    assert ours.transformers_model.is_activation_checkpointing
    assert ours.get_device_name() == theirs.get_device_name()


@pytest.mark.parametrize("local_rank", [None, "1"])
def test_device_name_under_torchrun_as_the_reference(monkeypatch, local_rank):
    # No GPU here: torch is told one is visible (two devices, cuda:0 current), as torchrun's ranks see them.
    from sentence_transformers.util import get_device_name as theirs

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    if local_rank is None:
        monkeypatch.delenv("LOCAL_RANK", raising=False)
    else:
        monkeypatch.setenv("LOCAL_RANK", local_rank)
    assert sbert.util.get_device_name() == theirs() == f"cuda:{local_rank or 0}"


def test_pools_encode_as_without_and_say_when_unused(folders):
    ours, _ = pair(folders, "CrossEncoder")
    pool = ours.start_multi_process_pool(["cpu", "cpu"])
    with pytest.warns(UserWarning, match="the pool is not used"):
        pooled = ours.predict([("a", "b"), ("c", "d")], pool=pool)
    assert pooled.tolist() == pytest.approx(ours.predict([("a", "b"), ("c", "d")]).tolist(), abs=1e-6)
    ours.stop_multi_process_pool(pool)


def test_cross_encoder_activation_names_and_include_prompt(folders):
    ours, theirs = pair(folders, "CrossEncoder")
    assert type(ours.get_default_activation_fn()) is type(theirs.get_default_activation_fn())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert type(ours.default_activation_function) is type(theirs.default_activation_function)
    dense, _ = pair(folders, "SentenceTransformer")
    texts = ["a short text", "another one"]
    with_prompt = dense.encode(texts, prompt="query: ")
    dense.set_pooling_include_prompt(False)
    assert not torch.allclose(torch.from_numpy(dense.encode(texts, prompt="query: ")), torch.from_numpy(with_prompt))


FORWARD_KEYS = [("SentenceTransformer", "sentence_embedding"), ("SparseEncoder", "sentence_embedding"),
                ("CrossEncoder", "scores")]  # fmt: skip


@pytest.mark.parametrize(("name", "key"), FORWARD_KEYS)
def test_forward_on_preprocessed_inputs_gives_6_2s_output(folders, name, key):
    """`model(model.preprocess(inputs))[key]`, as a loss written by hand calls it, with gradients."""
    ours, theirs = pair(folders, name)
    inputs = [("a query", "a document"), ("q", "d two")] if name == "CrossEncoder" else ["one text", "two texts here"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ours(input=ours.preprocess(inputs))[key]
        want = theirs(theirs.preprocess(inputs))[key]
    assert got.shape == want.shape and got.requires_grad
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


def test_cross_encoder_legacy_collates_give_6_2s_batches(folders):
    ours, theirs = pair(folders, "CrossEncoder")
    examples = [st.InputExample(texts=[" a query ", "a document"], label=1), st.InputExample(texts=["q", "d two "])]
    for collate in ("smart_batching_collate", "smart_batching_collate_text_only"):
        batch = examples if collate == "smart_batching_collate" else [e.texts for e in examples]
        got, want = getattr(ours, collate)(batch), getattr(theirs, collate)(batch)
        if collate == "smart_batching_collate":
            assert torch.equal(got[1], want[1]) and got[1].dtype == want[1].dtype == torch.float
            got, want = got[0], want[0]
        assert set(got) == set(want)
        assert all(torch.equal(got[k], want[k]) for k in want)
