"""sentence-transformers 6.2's PEFT calls on the drop-in model: a LoRA adapter added, switched off and on, and trained
through the drop-in trainer, as 6.2 does it on the same folder (transformers' adapter methods underneath)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import sbert
from tests.st_training_fixtures import tiny_st_folder

st = pytest.importorskip("sentence_transformers")
peft = pytest.importorskip("peft")
TEXTS = ["a short text", "another sentence here", "x"]


def lora() -> object:
    return peft.LoraConfig(r=4, lora_alpha=8, target_modules=["query", "value"], init_lora_weights=False)


def test_adapter_methods_answer_as_6_2(tmp_path):
    folder = str(tiny_st_folder(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = sbert.SentenceTransformer(folder, device="cpu"), st.SentenceTransformer(folder, device="cpu")
        base = ours.encode(TEXTS)
        assert ours.has_peft_compatible_model() and theirs.has_peft_compatible_model()
        try:
            torch.manual_seed(0)  # the same seed gives the same (non-zero) LoRA weights
            theirs.add_adapter(lora())
        except ValueError as refused:  # transformers' adapter API wants a newer peft than the index has
            with pytest.raises(ValueError, match="PEFT"):
                ours.add_adapter(lora())
            pytest.skip(f"transformers' adapter methods refuse this peft ({peft.__version__}): {refused}")
        torch.manual_seed(0)
        ours.add_adapter(lora())
    assert ours.active_adapters() == theirs.active_adapters() == ["default"]
    assert sorted(ours.get_adapter_state_dict()) == sorted(theirs.get_adapter_state_dict())
    with_adapter = ours.encode(TEXTS)
    np.testing.assert_allclose(with_adapter, theirs.encode(TEXTS), atol=1e-5)
    assert np.abs(with_adapter - base).max() > 1e-4  # init_lora_weights=False: the adapter changes the vectors
    ours.disable_adapters()
    np.testing.assert_allclose(ours.encode(TEXTS), base, atol=1e-6)  # the engine sees the switch
    ours.enable_adapters()
    np.testing.assert_allclose(ours.encode(TEXTS), with_adapter, atol=1e-6)
    ours.delete_adapter("default")
    np.testing.assert_allclose(ours.encode(TEXTS), base, atol=1e-6)
