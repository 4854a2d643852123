"""Under torchrun, batch-level losses see the global batch (losses/gather.py): two gloo processes with --batch-size 8
take the same steps as one process with batch 8, for MNRL, cached MNRL, CoSENT and ColBERT's contrastive loss,
within 1% of the update; with the gather turned off they do not. The noise floor is measured the same way: one
process, another thread count."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModel, AutoTokenizer

from tests.colbert_fixtures import tiny_colbert
from tests.conftest import SHARED_DATA

ENV = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def setup(tiny_dirs, tmp_path_factory) -> tuple[Path, Path]:
    """A tiny BERT without dropout (steps must be deterministic) and 24 real STS benchmark pairs (3 steps of 8)."""
    base = tmp_path_factory.mktemp("ddp")
    config = AutoConfig.from_pretrained(tiny_dirs["bert"], hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    AutoModel.from_pretrained(tiny_dirs["bert"], config=config).save_pretrained(base / "model")
    AutoTokenizer.from_pretrained(tiny_dirs["bert"]).save_pretrained(base / "model")
    lines = (SHARED_DATA / "stsbenchmark" / "sts-train.csv").read_text(encoding="utf-8").splitlines()
    seen: set[str] = set()
    kept: list[str] = []
    for line in lines:  # no text twice: MNRL's batches then hold 8 rows each, the same batches for 1 and 2 processes
        texts = set(line.split("\t")[5:7])
        if len(texts) == 2 and seen.isdisjoint(texts) and len(kept) < 24:
            kept.append(line)
            seen |= texts
    (base / "train.csv").write_text("\n".join(kept) + "\n", encoding="utf-8")
    with (base / "pairs.csv").open("w", encoding="utf-8", newline="") as f:  # the same pairs, for a ColBERT model
        writer = csv.writer(f)
        writer.writerow(["question", "answer"])
        writer.writerows([line.split("\t")[5:7] for line in kept])
    colbert = tiny_colbert(base / "mv", query_length=16, document_length=32)
    config = json.loads((colbert / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (colbert / "config.json").write_text(json.dumps(config))
    return base / "model", base / "train.csv"


def train(setup, objective: str, out: Path, processes: int, *extra: str, env: dict[str, str] = ENV) -> Path:
    model, table = setup
    data = ["--train", f"stsb:{table}"]
    if objective == "cached-mnrl":  # replayed in mini-batches of 2 rows, gathered across ranks
        data += ["--option", "mini_batch=2"]
    if objective == "colbert":  # the multi-vector contrastive loss: a ColBERT model on the same pairs
        model = table.parent / "mv" / "colbert"
        data = ["--train", f"csv:{table.parent / 'pairs.csv'}", "--columns", "anchor=question,positive=answer"]
    torchrun = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        str(processes),
        "--master_port",
        "29541",
    ]
    launcher = [sys.executable] if processes == 1 else torchrun
    args = ["-m", "sbert.cli.main", "train", "--model", str(model), "--objective", objective, *data,
            "--output", str(out), "--batch-size", "8", "--epochs", "1", "--lr", "1e-4",
            "--warmup", "0", "--device", "cpu", "--no-progress", "--seed", "0", *extra]  # fmt: skip
    proc = subprocess.run([*launcher, *args], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


def weights(folder: Path) -> dict[str, torch.Tensor]:
    """A folder's encoder weights by parameter name."""
    return {k.removeprefix("bert."): v for k, v in load_file(str(folder / "model.safetensors")).items()}


def update(start: Path, trained: Path) -> np.ndarray:
    """The trained encoder's weights minus the starting ones, flattened."""
    before, after = weights(start), weights(trained)
    keys = sorted(set(before) & set(after))
    assert len(keys) > 10, (list(before)[:3], list(after)[:3])
    return torch.cat([(after[k] - before[k]).flatten() for k in keys]).double().numpy()


def relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.e2e  # ten new processes, each importing torch
@pytest.mark.parametrize("objective", ["mnrl", "cached-mnrl", "cosent", "colbert"])
def test_two_processes_take_the_one_process_step(setup, objective, tmp_path):
    model = setup[0] if objective != "colbert" else setup[1].parent / "mv" / "colbert"
    one = update(model, train(setup, objective, tmp_path / "one", 1))
    floor = relative(update(model, train(setup, objective, tmp_path / "threads", 1,
                                         env={**ENV, "OMP_NUM_THREADS": "2"})), one)  # fmt: skip
    two = relative(update(model, train(setup, objective, tmp_path / "two", 2)), one)
    alone = relative(update(model, train(setup, objective, tmp_path / "alone", 2, "--no-gather-across-ranks")), one)
    print(f"{objective}: 2 processes {two:.2e} of the update, noise floor {floor:.2e}, ungathered {alone:.2e}")
    assert floor < 1e-3 and two <= 0.01  # the bound; the floor says how close it can be
    assert alone > 10 * max(two, 1e-4)  # the test can fail: each rank's share alone is another step
