"""The settings fingerprint ranks compare under torchrun (training/agreement.py): what must stop a run, and what not.

Every setting that changes an update or when the ranks meet changes the fingerprint; paths that a node
mounts elsewhere (the model, tables, dev sets, output) do not. The torchrun runs themselves are in
tests/test_train_ddp.py (e2e).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from sbert.training.agreement import settings_print
from sbert.training.config import Objective, Stage, TrainConfig

STAGE = Stage((Objective("mnrl", "csv:/node-a/pairs.csv"),), dev="stsb:/node-a/dev.csv")
CONFIG = TrainConfig(model="/node-a/model", output="/node-a/out", stages=(STAGE,))

STAGE_CHANGES = {"warmup": 0.5, "warmup_steps": 7, "weight_decay": 0.5, "max_grad_norm": 0.5,
                 "allow_duplicates": True, "eval_steps": 5, "lr": 1e-4, "batch_size": 4, "grad_accum": 2}  # fmt: skip
CONFIG_CHANGES = {"pooling": "cls", "dense": ("256:tanh",), "gradient_checkpointing": True, "max_seq_length": 32,
                  "lora": "r=8", "log_steps": 3, "checkpoint_steps": 50, "seed": 1, "precision": "bf16"}  # fmt: skip


@pytest.mark.parametrize(("field", "value"), sorted(STAGE_CHANGES.items()))
def test_a_stage_setting_that_changes_the_update_changes_the_print(field, value):
    other = replace(CONFIG, stages=(replace(STAGE, **{field: value}),))
    assert settings_print(other, other.stages[0]) != settings_print(CONFIG, STAGE)


@pytest.mark.parametrize(("field", "value"), sorted(CONFIG_CHANGES.items()))
def test_a_run_setting_that_changes_the_update_changes_the_print(field, value):
    assert settings_print(replace(CONFIG, **{field: value}), STAGE) != settings_print(CONFIG, STAGE)


def test_the_same_files_at_other_paths_keep_the_print():
    stage = replace(STAGE, objectives=(Objective("mnrl", "csv:/mnt/b/pairs.csv"),), dev="stsb:/mnt/b/dev.csv")
    other = replace(CONFIG, model="/mnt/b/model", output="/mnt/b/out", stages=(stage,))
    assert settings_print(other, stage) == settings_print(CONFIG, STAGE)
