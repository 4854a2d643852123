"""The reference's module paths that scripts import from (its legacy aliases included) import from sbert too.

The list is the reference's own table of module paths (sentence_transformers/util/deprecated_import.py),
read here, so a path it adds is checked without editing this test; what sbert leaves out is named with its
reason. A path is imported as a module (`import sbert.losses.MSELoss`, as a 2.x script's `from
sentence_transformers.losses.MSELoss import MSELoss` does), not only looked up as a name of its parent.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest

from tests.st_surface_allowed import ALLOWED

st = pytest.importorskip("sentence_transformers")

NOT_BUILT = "a module or class sbert does not provide (docs/migrating.md)"
LEFT_OUT = {
    **{f"models.{n}": NOT_BUILT for n in ("CLIPModel", "InputModule", "Module",
                                         "tokenizer.PhraseTokenizer", "tokenizer.WordTokenizer")},
    **{f"readers.{n}": NOT_BUILT for n in ("LabelSentenceReader", "PairedFilesReader", "NLIDataReader",
                                          "STSDataReader", "TripletReader")},
    "datasets.SentenceLabelDataset": NOT_BUILT,
    "evaluation.NanoBEIREvaluator": "downloads its data", "sparse_encoder.evaluation.SparseNanoBEIREvaluator": "same",
    "peft_mixin": "6.2's internal mixin", "data_collator": "6.2's internal collator",
}  # fmt: skip


def paths() -> list[str]:
    source = (Path(st.__file__).parent / "util" / "deprecated_import.py").read_text(encoding="utf-8")
    return [p.removeprefix("sentence_transformers.") for p in re.findall(r'^\s*"(sentence_transformers\.[^"]+)":',
                                                                          source, re.M)]  # fmt: skip


def importable(path: str) -> bool:
    """`import sbert.PATH` works, and a class path gives the parent's class and leaves it in place."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            module = importlib.import_module(f"sbert.{path}")
        except ImportError:
            return False
    parent_name, _, name = f"sbert.{path}".rpartition(".")
    if not name[:1].isupper():
        return True
    held = getattr(importlib.import_module(parent_name), name)
    return getattr(module, name) is held and not isinstance(held, types.ModuleType)


def test_the_reference_s_module_paths_import_from_sbert():
    found = paths()
    assert len(found) > 100  # the table was read
    left_out = [p for p in found if any(p == k or p.startswith(k + ".") for k in LEFT_OUT)]
    missing = [p for p in found if p not in left_out and not importable(p)]
    assert missing == []
    gained = [p for p in left_out if importable(p)]
    assert gained == []  # take it off LEFT_OUT


# 6.2's current packages of modules (what its docs import from), each name in their __all__.
MODULE_PACKAGES = ("base.modules", "sentence_transformer.modules", "sparse_encoder.modules")
# What they lack is the surface test's allow-list (tests/st_surface_allowed.py), which gives each its reason.
MODULES_LEFT_OUT = {key.rpartition(".")[2]: why for key, why in ALLOWED.items() if ".modules." in key}


@pytest.mark.parametrize("package", MODULE_PACKAGES)
def test_6_2s_module_packages_export_from_sbert(package):
    theirs = importlib.import_module(f"sentence_transformers.{package}").__all__
    ours = importlib.import_module(f"sbert.{package}")
    assert [n for n in theirs if n not in MODULES_LEFT_OUT and not hasattr(ours, n)] == []
    assert [n for n in theirs if n in MODULES_LEFT_OUT and hasattr(ours, n)] == []  # take it off MODULES_LEFT_OUT


def test_moved_modules_hold_sbert_s_own_names():
    from sbert.model_card import SentenceTransformerModelCardData
    from sbert.sampler import BatchSamplers
    from sbert.sentence_transformer.modules.normalize import Normalize

    import sbert

    assert SentenceTransformerModelCardData is sbert.SentenceTransformerModelCardData
    assert BatchSamplers is sbert.training_args.BatchSamplers and Normalize is sbert.models.Normalize


def test_unknown_paths_still_fail():
    for path in ("sbert.losses.NoSuchLoss", "sbert.models.NoSuchModule", "sbert.no_such_module", "sbert.losses.mse"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(path)


def test_a_legacy_script_s_imports_run_in_a_fresh_process_and_import_sbert_loads_no_torch():
    subprocess.run([sys.executable, "-c", "import sys, sbert; assert 'torch' not in sys.modules"], check=True)
    script = (
        "from sbert.losses.MultipleNegativesRankingLoss import MultipleNegativesRankingLoss\n"
        "from sbert.models.Pooling import Pooling\n"
        "from sbert.SentenceTransformer import SentenceTransformer\n"
        "import sbert\n"
        "assert sbert.SentenceTransformer is SentenceTransformer and sbert.models.Pooling is Pooling\n"
        "assert sbert.losses.MultipleNegativesRankingLoss is MultipleNegativesRankingLoss\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
