"""`sbert train --objective colbert`: a multi-vector model trains through the shared trainer, by every reader."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert.cli.main import main
from sbert.multivector import MultiVectorEncoder
from tests.colbert_fixtures import build_native, build_punctuated_bert, build_pylate
from tests.conftest import SHARED_DATA

EXPANSION = {"strategy": "fixed", "attend": False, "length": 16}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("mv-train")
    bert = build_punctuated_bert(base / "bert")
    native = build_native(bert, base / "native", query_length=16, document_length=32, query_expansion=EXPANSION)
    lines = (SHARED_DATA / "stsbenchmark" / "sts-train.csv").read_text(encoding="utf-8").splitlines()
    with (base / "pairs.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["question", "answer"])
        for line in lines[:48]:
            cols = line.split("\t")
            writer.writerow([cols[5], cols[6]])
    return {"bert": bert, "native": native, "pylate": build_pylate(bert, base / "pylate"), "pairs": base / "pairs.csv"}


def train(model: Path, out: Path, table: Path, *extra: str) -> int:
    return main(["train", "--model", str(model), "--output", str(out), "--device", "cpu", "--batch-size", "8",
                 "--train", f"csv:{table}", "--columns", "anchor=question,positive=answer", "--objective", "colbert",
                 "--no-progress", *extra])  # fmt: skip


@pytest.mark.parametrize("layout", ["native", "pylate"])
def test_training_changes_the_weights_and_keeps_the_layout(setup: dict[str, Path], tmp_path: Path, layout: str) -> None:
    from sentence_transformers import MultiVectorEncoder as Reference

    assert train(setup[layout], tmp_path / "out", setup["pairs"]) == 0
    before = MultiVectorEncoder.load(setup[layout], device="cpu")
    after = MultiVectorEncoder.load(tmp_path / "out", device="cpu")
    assert after.mv_settings == before.mv_settings  # lengths, expansion, prefixes and skiplist survive
    moved = [not torch.equal(a, b) for a, b in zip(before.state_dict().values(), after.state_dict().values(),
                                                       strict=True)]  # fmt: skip
    assert any(moved)
    ref = Reference(str(tmp_path / "out"), device="cpu")  # the trained folder loads in the reference, same vectors
    texts = ["a man is playing a guitar.", "why, a dog?"]
    for ours, theirs in zip(after.encode_query(texts), ref.encode_query(texts), strict=True):
        np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-5)
    log = [json.loads(x) for x in (tmp_path / "out" / "train_log.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in log if r["event"] == "train"]
    assert losses and all(np.isfinite(losses))


def test_a_plain_encoder_becomes_a_colbert_and_lora_trains_it(setup: dict[str, Path], tmp_path: Path) -> None:
    assert train(setup["bert"], tmp_path / "new", setup["pairs"]) == 0
    model = MultiVectorEncoder.load(tmp_path / "new", device="cpu")
    assert model.embedding_dimension == 128 and model.settings.model_type == "MultiVectorEncoder"
    assert train(setup["native"], tmp_path / "lora", setup["pairs"], "--lora", "r=4") == 0
    assert (tmp_path / "lora" / "adapter_config.json").is_file() or any(
        (tmp_path / "lora").rglob("adapter_config.json")
    )


def test_objectives_and_models_must_match(
    setup: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["train", "--model", str(setup["native"]), "--output", str(tmp_path / "x"), "--device", "cpu",
                 "--train", f"csv:{setup['pairs']}", "--columns", "anchor=question,positive=answer",
                 "--objective", "mnrl", "--no-progress"]) == 2  # fmt: skip
    assert "does not train a multi-vector" in capsys.readouterr().err


def test_max_seq_length_is_refused_with_the_lengths_to_use(setup: dict[str, Path], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    assert train(setup["native"], tmp_path / "x", setup["pairs"], "--max-seq-length", "16") == 2
    assert "query_length and document_length" in capsys.readouterr().err


def test_the_cached_objective_trains_through_the_cli(setup: dict[str, Path], tmp_path: Path) -> None:
    code = main(["train", "--model", str(setup["native"]), "--output", str(tmp_path / "out"), "--device", "cpu",
                 "--batch-size", "8", "--train", f"csv:{setup['pairs']}", "--objective", "cached-colbert",
                 "--columns", "anchor=question,positive=answer", "--option", "mini_batch=3",
                 "--no-progress"])  # fmt: skip
    assert code == 0
    before = MultiVectorEncoder.load(setup["native"], device="cpu").state_dict()
    after = MultiVectorEncoder.load(tmp_path / "out", device="cpu").state_dict()
    assert any(not torch.equal(a, b) for a, b in zip(before.values(), after.values(), strict=True))


def test_a_distillation_table_trains_colbert_distill(setup: dict[str, Path], tmp_path: Path) -> None:
    from sbert.data import load_dataset
    from sbert.errors import SbertError

    rows = [{"query": f"question {i} about cats", "positive": f"cats answer {i}", "negative_1": f"dogs {i}",
             "negative_2": f"rain {i}", "label": [9.5 - i % 3, 4.0, 1.0 + i % 2]} for i in range(24)]  # fmt: skip
    table = tmp_path / "distill.jsonl"
    table.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    data = load_dataset(f"jsonl:{table}")
    assert data.kind == "distill" and data.texts[0] == ("question 0 about cats", "cats answer 0", "dogs 0", "rain 0")
    assert data.labels is not None and data.labels[1] == [8.5, 4.0, 2.0]
    code = main(["train", "--model", str(setup["native"]), "--output", str(tmp_path / "out"), "--device", "cpu",
                 "--batch-size", "8", "--train", f"jsonl:{table}", "--objective", "colbert-distill",
                 "--no-progress"])  # fmt: skip
    assert code == 0
    log = [json.loads(x) for x in (tmp_path / "out" / "train_log.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in log if r["event"] == "train"]
    assert losses and all(np.isfinite(losses)) and any(v > 0 for v in losses)
    rows[5]["label"] = [1.0, 2.0]  # two scores for three documents
    table.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(SbertError, match=r"distill\.jsonl:6: column 'label' holds \[1.0, 2.0\], expected a list of 3 "):
        load_dataset(f"jsonl:{table}")
