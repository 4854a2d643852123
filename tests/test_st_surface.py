"""sentence-transformers' public surface (the release the dev extra installs: 6.3), read with inspect, against ours.

Every public name of its top-level module, `losses`, `evaluation`, `util` and its model and trainer
classes must exist in sbert with the same parameters (names, order, defaults), unless the name is in the
documented allow-list (tests/st_surface_allowed.py) or, for the trainer classes, inherited unchanged from
transformers' Trainer / TrainingArguments. An allow-listed name that sbert has gained fails too, so the
list only shrinks.
"""

from __future__ import annotations

import dataclasses
import importlib

import pytest
import transformers

import sbert
from tests.st_surface_allowed import ALLOWED
from tests.surface import differences

st = pytest.importorskip("sentence_transformers")

PARTS = ("", ".losses", ".evaluation", ".util", ".cross_encoder", ".cross_encoder.losses", ".cross_encoder.evaluation",
         ".sparse_encoder", ".sparse_encoder.losses", ".sparse_encoder.evaluation", ".multi_vector_encoder",
         ".multi_vector_encoder.losses", ".multi_vector_encoder.evaluation", ".models", ".sentence_transformer.modules",
         ".base.modules")  # fmt: skip
MODULES = [(f"sentence_transformers{part}", f"sbert{part}") for part in PARTS]
TRAINERS = ["SentenceTransformerTrainer", "CrossEncoderTrainer", "SparseEncoderTrainer", "MultiVectorEncoderTrainer"]
ARGUMENTS = ["SentenceTransformerTrainingArguments", "CrossEncoderTrainingArguments", "SparseEncoderTrainingArguments",
             "MultiVectorEncoderTrainingArguments"]  # fmt: skip
CLASSES = ["SentenceTransformer", "CrossEncoder", "SparseEncoder", *TRAINERS, *ARGUMENTS]
# What the trainer classes inherit from transformers without changing it: the training loop's own machinery.
INHERITED = {**dict.fromkeys(TRAINERS, transformers.Trainer),
             **dict.fromkeys(ARGUMENTS, transformers.TrainingArguments)}  # fmt: skip


def inherited_unchanged(cls_name: str, attr: str) -> bool:
    """Whether 6.2's class takes `attr` from transformers as it is (not redefined in sentence-transformers)."""
    base = INHERITED.get(cls_name)
    if base is None or not hasattr(base, attr):
        return False
    own = set().union(*(vars(c) for c in getattr(st, cls_name).__mro__ if c.__module__.startswith("sentence_")))
    return attr not in own


def gaps() -> dict[str, str]:
    out = {}
    for reference, ours in MODULES:
        out.update(differences(importlib.import_module(reference), importlib.import_module(ours), ours))
    for name in CLASSES:
        found = differences(getattr(st, name), getattr(sbert, name), name)
        out.update({k: v for k, v in found.items() if not inherited_unchanged(name, k.split(".", 1)[1])})
    return out


def allowed_as(name: str) -> str:
    """The allow-list key of a gap: the three trainers share one base class here, so they share its entries."""
    cls, _, attr = name.partition(".")
    return f"SentenceTransformerTrainer.{attr}" if cls in TRAINERS and attr else name


def test_every_public_name_is_there_or_allowed_with_a_reason():
    found = gaps()
    unexplained = {name: what for name, what in found.items() if allowed_as(name) not in ALLOWED}
    assert not unexplained, f"sentence-transformers' public names that sbert lacks or takes otherwise: {unexplained}"
    gained = sorted(name for name in ALLOWED if name not in {allowed_as(n) for n in found})
    assert not gained, f"sbert now has these: take them out of tests/st_surface_allowed.py: {gained}"


def test_training_arguments_default_to_6_2s_values():
    """Every field of the arguments, built with only output_dir, holds 6.2's value (enums by their value)."""
    ours = sbert.SentenceTransformerTrainingArguments(output_dir="out")
    theirs = st.SentenceTransformerTrainingArguments(output_dir="out")

    def plain(value):
        return getattr(value, "value", value)

    skip = {"logging_dir"}  # transformers derives it from the start time
    differing = {f.name: (plain(getattr(ours, f.name)), plain(getattr(theirs, f.name)))
                 for f in dataclasses.fields(theirs)
                 if f.name not in skip and plain(getattr(ours, f.name)) != plain(getattr(theirs, f.name))}  # fmt: skip
    # transformers fills these in __post_init__ from the device it sets up; sbert's engine sets up its own.
    differing = {k: v for k, v in differing.items() if k not in {"accelerator_config", "parallelism_config"}}
    assert not differing, differing
