"""6.2's module paths that scripts import from (its deprecated aliases included) import from sbert too.

The list is 6.2's own table of module paths (sentence_transformers/util/deprecated_import.py), read here,
so a path 6.2 adds is checked without editing this test; what sbert leaves out is named with its reason.
"""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest

st = pytest.importorskip("sentence_transformers")

NOT_BUILT = "a module or class sbert does not provide (docs/migrating.md)"
LEFT_OUT = {
    **{f"models.{n}": NOT_BUILT for n in ("BoW", "CLIPModel", "CNN", "Dropout", "InputModule", "LSTM", "Module",
                                         "WeightedLayerPooling", "WordEmbeddings", "WordWeights", "tokenizer")},
    **{f"readers.{n}": NOT_BUILT for n in ("LabelSentenceReader", "PairedFilesReader", "NLIDataReader",
                                          "STSDataReader", "TripletReader")},
    "datasets.SentenceLabelDataset": NOT_BUILT,
    "sentence_transformer.modules.normalize": "one file of 6.2's package (sbert.sentence_transformer.modules has it)",
    "evaluation.NanoBEIREvaluator": "downloads its data", "sparse_encoder.evaluation.SparseNanoBEIREvaluator": "same",
    "sampler": "6.2's batch sampler classes (the trainer's batch_sampler names are in training_args)",
    "peft_mixin": "6.2's internal mixin", "model_card": "6.2's card callback module (the card data is in sbert)",
    "data_collator": "6.2's internal collator",
}  # fmt: skip


def paths() -> list[str]:
    source = (Path(st.__file__).parent / "util" / "deprecated_import.py").read_text(encoding="utf-8")
    return [p.removeprefix("sentence_transformers.") for p in re.findall(r'^\s*"(sentence_transformers\.[^"]+)":',
                                                                          source, re.M)]  # fmt: skip


def importable(path: str) -> bool:
    """`import sbert.PATH`, or `from sbert.PARENT import NAME`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            importlib.import_module(f"sbert.{path}")
            return True
        except ImportError:
            parent, _, name = f"sbert.{path}".rpartition(".")
            try:
                return hasattr(importlib.import_module(parent), name)
            except ImportError:
                return False


def test_6_2s_module_paths_import_from_sbert():
    found = paths()
    assert len(found) > 100  # the table was read
    left_out = [p for p in found if any(p == k or p.startswith(k + ".") for k in LEFT_OUT)]
    missing = [p for p in found if p not in left_out and not importable(p)]
    assert missing == []
    gained = [p for p in left_out if importable(p)]
    assert gained == []  # take it off LEFT_OUT


# 6.2's current packages of modules (what its docs import from), each name in their __all__.
MODULE_PACKAGES = ("base.modules", "sentence_transformer.modules", "sparse_encoder.modules")
MODULES_LEFT_OUT = {
    "Module": "6.2's abstract base for custom modules (sbert's modules follow sbert.modules.Module)",
    "InputModule": "same", **{n: NOT_BUILT for n in ("BoW", "CLIPModel", "CNN", "Dropout", "LSTM",
                                                     "WeightedLayerPooling", "WordEmbeddings", "WordWeights")},
}  # fmt: skip


@pytest.mark.parametrize("package", MODULE_PACKAGES)
def test_6_2s_module_packages_export_from_sbert(package):
    theirs = importlib.import_module(f"sentence_transformers.{package}").__all__
    ours = importlib.import_module(f"sbert.{package}")
    assert [n for n in theirs if n not in MODULES_LEFT_OUT and not hasattr(ours, n)] == []
    assert [n for n in theirs if n in MODULES_LEFT_OUT and hasattr(ours, n)] == []  # take it off MODULES_LEFT_OUT
