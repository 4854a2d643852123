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
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModel, AutoTokenizer, BertForMaskedLM

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
    (base / "texts.txt").write_text("\n".join(line.split("\t")[5] for line in kept) + "\n", encoding="utf-8")
    colbert = tiny_colbert(base / "mv", query_length=16, document_length=32)
    config = json.loads((colbert / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (colbert / "config.json").write_text(json.dumps(config))
    config = AutoConfig.from_pretrained(tiny_dirs["bert"], hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    BertForMaskedLM(config).save_pretrained(base / "mlm")  # SPLADE trains a masked-LM checkpoint
    AutoTokenizer.from_pretrained(tiny_dirs["bert"]).save_pretrained(base / "mlm")
    return base / "model", base / "train.csv"


def start_of(setup, objective: str) -> Path:
    """The folder an objective trains: ColBERT's losses a ColBERT model, SPLADE a masked LM, the rest tiny BERT."""
    base = setup[1].parent
    if objective in ("colbert", "cached-colbert"):
        return base / "mv" / "colbert"
    return base / "mlm" if objective == "splade" else setup[0]


def data_of(setup, objective: str) -> list[str]:
    """The training arguments of each objective: STS pairs, as a QA table for ColBERT, the texts alone for IS-BERT."""
    table = setup[1]
    if objective in ("colbert", "cached-colbert"):
        data = ["--train", f"csv:{table.parent / 'pairs.csv'}", "--columns", "anchor=question,positive=answer"]
    elif objective == "infomax":  # IS-BERT: a fresh n-gram CNN head (seeded alike in every process) on unlabelled text
        data = ["--train", f"text:{table.parent / 'texts.txt'}", "--pooling", "ngram-cnn"]
    else:
        data = ["--train", f"stsb:{table}"]
    if objective.startswith("cached-"):  # replayed in mini-batches of 2 rows, gathered across ranks
        data += ["--option", "mini_batch=2"]
    return data


def train(setup, objective: str, out: Path, processes: int, *extra: str, env: dict[str, str] = ENV) -> Path:
    model, data = start_of(setup, objective), data_of(setup, objective)
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
            "--warmup", "0", "--device", "cpu", "--no-progress", "--seed", "0", "--log-steps", "1", *extra]  # fmt: skip
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


def logged_losses(folder: Path) -> list[float]:
    """The losses a run's log recorded, step by step."""
    records = [json.loads(line) for line in (folder / "train_log.jsonl").read_text(encoding="utf-8").splitlines()]
    return [r["loss"] for r in records if r["event"] == "train"]


def relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.e2e  # ten new processes, each importing torch
@pytest.mark.parametrize("objective", ["mnrl", "cached-mnrl", "cosent", "colbert", "cached-colbert", "splade",
                                       "infomax"])  # fmt: skip
def test_two_processes_take_the_one_process_step(setup, objective, tmp_path):
    model = start_of(setup, objective)
    one = update(model, train(setup, objective, tmp_path / "one", 1))
    floor = relative(update(model, train(setup, objective, tmp_path / "threads", 1,
                                         env={**ENV, "OMP_NUM_THREADS": "2"})), one)  # fmt: skip
    two = relative(update(model, train(setup, objective, tmp_path / "two", 2)), one)
    # The log reports the global batch's loss: rank 0's share alone would differ.
    assert logged_losses(tmp_path / "two") == pytest.approx(logged_losses(tmp_path / "one"), rel=1e-3)
    alone = relative(update(model, train(setup, objective, tmp_path / "alone", 2, "--no-gather-across-ranks")), one)
    print(f"{objective}: 2 processes {two:.2e} of the update, noise floor {floor:.2e}, ungathered {alone:.2e}")
    assert floor < 1e-3 and two <= 0.01  # the bound; the floor says how close it can be
    assert alone > 10 * max(two, 1e-4)  # the test can fail: each rank's share alone is another step


@pytest.mark.e2e  # two launches
def test_an_uneven_batch_takes_the_one_process_step(setup, tmp_path):
    """7 rows on 2 processes (4 + 3): weighted by global rows, the step and the logged loss are one process's."""
    model, table = setup
    uneven = tmp_path / "seven.csv"
    uneven.write_text("\n".join(table.read_text(encoding="utf-8").splitlines()[:7]) + "\n", encoding="utf-8")
    runs = {}
    for processes in (1, 2):
        out = tmp_path / f"p{processes}"
        launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29543"]
        args = ["-m", "sbert.cli.main", "train", "--model", str(model), "--objective", "mnrl", "--train",
                f"stsb:{uneven}", "--output", str(out), "--batch-size", "8", "--epochs", "1", "--lr", "1e-4",
                "--warmup", "0", "--device", "cpu", "--no-progress", "--seed", "0", "--log-steps", "1"]  # fmt: skip
        command = [*(launcher if processes == 2 else [sys.executable]), *args]
        proc = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs[processes] = out
    assert logged_losses(runs[2]) == pytest.approx(logged_losses(runs[1]), rel=1e-3)
    assert relative(update(model, runs[2]), update(model, runs[1])) <= 0.01


RANK_SCRIPT = """
import os, sys
import sbert
rank, (model, other, output, differ) = int(os.environ["RANK"]), sys.argv[1:]
lines = open(os.environ["TABLE"], encoding="utf-8").read().splitlines()
pairs = {"anchor": [l.split("\\t")[5] for l in lines], "positive": [l.split("\\t")[6] for l in lines]}
settings = dict(batch_size=8, epochs=1, device="cpu", show_progress=False)
if rank == 1 and differ == "data":  # this node's copy of the table has one row edited
    pairs["positive"][3] = "A different sentence altogether."
if rank == 1 and differ == "model":  # this node holds another checkpoint of the same architecture
    model = other
if rank == 1 and differ == "settings":
    settings["batch_size"] = 4
if rank == 1 and differ in ("warmup", "weight_decay"):  # settings that change the update, not the step count
    settings[differ] = 0.5
sbert.train(model, output, datasets={"qa": pairs}, objectives={"qa": "mnrl"}, **settings)
"""


@pytest.mark.e2e  # five torchrun launches
@pytest.mark.parametrize(
    ("differ", "what"),
    [
        ("data", "training data of objective 1 (mnrl)"),
        ("model", "model"),
        ("settings", "settings"),
        ("warmup", "settings"),
        ("weight_decay", "settings"),
    ],
)
def test_ranks_that_disagree_stop_with_one_line_before_the_first_step(setup, tiny_dirs, differ, what, tmp_path):
    model, table = setup
    other = tmp_path / "other"
    torch.manual_seed(1)
    AutoModel.from_config(AutoConfig.from_pretrained(model)).save_pretrained(other)
    AutoTokenizer.from_pretrained(model).save_pretrained(other)
    (tmp_path / "script.py").write_text(RANK_SCRIPT, encoding="utf-8")
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29542",
               str(tmp_path / "script.py"), str(model), str(other), str(tmp_path / "out"), differ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, env={**ENV, "TABLE": str(table)}, timeout=300)
    assert proc.returncode != 0
    assert f"rank 1 of 2 disagrees with rank 0 on the {what}: every process must train" in proc.stderr, proc.stderr[
        -3000:
    ]
    assert not (tmp_path / "out" / "model.safetensors").exists()  # no step was taken, nothing written


def long_table(path: Path, rows: int) -> Path:
    """`rows` STS benchmark pairs with no text twice (every MNRL batch full, as in `setup`)."""
    seen: set[str] = set()
    kept: list[str] = []
    for line in (SHARED_DATA / "stsbenchmark" / "sts-train.csv").read_text(encoding="utf-8").splitlines():
        texts = set(line.split("\t")[5:7])
        if len(texts) == 2 and seen.isdisjoint(texts) and len(kept) < rows:
            kept.append(line)
            seen |= texts
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return path


def rank_process(launcher: psutil.Process, rank: int) -> psutil.Process | None:
    """The worker torchrun started for `rank`, found by the RANK its environment holds."""
    for child in launcher.children(recursive=True):
        try:
            if child.environ().get("RANK") == str(rank):
                return child
        except psutil.Error:
            continue
    return None


@pytest.mark.e2e  # three torchrun launches
def test_a_rank_killed_mid_run_resumes_to_the_uninterrupted_weights(setup, tmp_path):
    table = long_table(tmp_path / "train.csv", 400)  # 50 steps of 8: the kill lands well before the end
    args = ["-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29543", "-m", "sbert.cli.main",
            "train", "--model", str(setup[0]), "--objective", "mnrl", "--train", f"stsb:{table}", "--batch-size", "8",
            "--epochs", "1", "--lr", "1e-4", "--device", "cpu", "--no-progress", "--seed", "0",
            "--checkpoint-steps", "3", "--log-steps", "1"]  # fmt: skip
    run = [sys.executable, *args]
    whole = subprocess.run([*run, "--output", str(tmp_path / "whole")], capture_output=True, text=True, env=ENV,
                           timeout=600)  # fmt: skip
    assert whole.returncode == 0, whole.stderr[-2000:]
    cut = tmp_path / "cut"
    launcher = subprocess.Popen([*run, "--output", str(cut)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, env=ENV)  # fmt: skip
    killed = None
    while launcher.poll() is None and killed is None:
        if (Path(f"{cut}.run") / "checkpoints" / "step-6").is_dir():
            killed = rank_process(psutil.Process(launcher.pid), 1)
            if killed is not None:
                killed.kill()  # SIGKILL: no handler runs, as when a node dies
        time.sleep(0.002)
    stderr = launcher.communicate(timeout=300)[1]
    assert killed is not None and launcher.returncode != 0, f"the run ended before the kill: {stderr[-2000:]}"
    assert not (cut / "model.safetensors").exists()
    resumed = subprocess.run([*run, "--output", str(cut), "--resume"], capture_output=True, text=True, env=ENV,
                             timeout=600)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    a, b = weights(tmp_path / "whole"), weights(cut)
    assert max(float((a[k] - b[k]).abs().max()) for k in a) == 0.0  # bit for bit: the same steps on the same batches
    steps = [json.loads(line)["step"] for line in (cut / "train_log.jsonl").read_text().splitlines()
             if json.loads(line)["event"] == "train"]  # fmt: skip
    assert steps == list(range(1, 51))  # the log reads as one run: every step once


READS_SCRIPT = """
import json, os, sys
import sbert
from sbert.host_reads import HostReads
from sbert.training.step import StepRunner

model, table, objective, out = sys.argv[1:]
lines = open(table, encoding="utf-8").read().splitlines()
pairs = {"anchor": [l.split("\\t")[5] for l in lines], "positive": [l.split("\\t")[6] for l in lines],
         "score": [float(l.split("\\t")[4]) / 5 for l in lines]}
original, seen = StepRunner.step, {}

def step(self, batches, number):
    if number != 2:
        return original(self, batches, number)
    with HostReads() as reads:  # the second step, steady: which lines read the device
        loss = original(self, batches, number)
    seen.update(reads.where)
    return loss

StepRunner.step = step
sbert.train(model, out, datasets={"sts": pairs}, objectives={"sts": objective}, batch_size=8, epochs=1, device="cpu",
            show_progress=False)
with open(f"{out}.reads-{os.environ['RANK']}.json", "w") as f:
    json.dump(seen, f)
"""


@pytest.mark.e2e  # two torchrun launches
@pytest.mark.parametrize("objective", ["mnrl", "cosent"])
def test_the_gathered_batch_reads_no_shapes_back_from_the_device(setup, objective, tmp_path):
    model, table = setup
    (tmp_path / "script.py").write_text(READS_SCRIPT, encoding="utf-8")
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29544",
               str(tmp_path / "script.py"), str(model), str(table), objective, str(tmp_path / "out")]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for rank in (0, 1):
        reads = json.loads((tmp_path / f"out.reads-{rank}.json").read_text())
        assert reads, "the step read nothing at all: on the CPU the optimizer does (the test would prove nothing)"
        assert not [where for where in reads if "gather.py" in where], reads  # the row counts came from the plan
