"""Training on tables and several sets at once: sbert.train(), the CLI and a TOML recipe, one code path."""

import csv
import json
from pathlib import Path

import pandas as pd
import pytest
import torch

import sbert
from sbert import SentenceEncoder
from sbert.cli.main import main
from sbert.errors import SbertError
from sbert.training import load_config
from tests.conftest import SHARED_DATA

STSB = SHARED_DATA / "stsbenchmark"


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, Path]:
    """A FAQ-like pair table (STSb train sentences) as CSV, and an STSb slice in its own format."""
    base = tmp_path_factory.mktemp("api")
    lines = (STSB / "sts-train.csv").read_text(encoding="utf-8").splitlines()
    with (base / "faq.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "q", "doc"])
        for i, line in enumerate(lines[:64]):
            cols = line.split("\t")
            writer.writerow([i, cols[5], cols[6]])
    (base / "sts.csv").write_text("\n".join(lines[100:116]) + "\n", encoding="utf-8")
    return {"faq": base / "faq.csv", "sts": base / "sts.csv"}


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]


def test_python_api_and_cli_train_the_same_weights(tiny_dirs, tables, tmp_path, capsys):
    model = str(tiny_dirs["bert"])
    frame = pd.read_csv(tables["faq"]).astype({"id": str})
    result = sbert.train(
        model, str(tmp_path / "api"),
        datasets={"faq": frame, "sts": f"stsb:{tables['sts']}"},
        objectives={"faq": "mnrl", "sts": "cosent"},
        columns={"faq": "anchor=q,positive=doc"},
        sampling="proportional", batch_size=8, device="cpu", show_progress=False,
    )  # fmt: skip
    main([
        "train", "--model", model, "--output", str(tmp_path / "cli"), "--device", "cpu", "--batch-size", "8",
        "--train", f"csv:{tables['faq']}", "--columns", "anchor=q,positive=doc", "--objective", "mnrl",
        "--train", f"stsb:{tables['sts']}", "--columns", "", "--objective", "cosent",
        "--sampling", "proportional", "--no-progress",
    ])  # fmt: skip
    assert "anchor=q, positive=doc (ignored: id); columns: id, q, doc" in capsys.readouterr().err
    a = SentenceEncoder.load(tmp_path / "api", device="cpu").state_dict()
    b = SentenceEncoder.load(tmp_path / "cli", device="cpu").state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    stage = next(r for r in records(tmp_path / "api") if r["event"] == "stage")
    # 64 FAQ rows make 9 batches of 8 (MNRL batches hold no text twice); 16 STSb rows make 2.
    assert stage["sampling"] == "proportional" and stage["batches"] == {"faq": 9, f"stsb:{tables['sts']}": 2}
    assert result.steps == 11
    card = (tmp_path / "api" / "README.md").read_text()
    assert "Batches per set (proportional): faq: 9, stsb:" in card
    assert "`faq`: roles: anchor=q, positive=doc" in card


def test_api_refuses_what_cannot_train(tiny_dirs, tmp_path):
    model = str(tiny_dirs["bert"])
    with pytest.raises(SbertError, match="unknown setting 'epoch'"):
        sbert.train(model, str(tmp_path / "o"), datasets={"a": {"text": ["x"]}}, objectives={"a": "infomax"}, epoch=2)
    with pytest.raises(SbertError, match="set 'b' needs both a dataset and an objective"):
        sbert.train(model, str(tmp_path / "o"), datasets={"a": {"text": ["x"]}}, objectives={"a": "mnrl", "b": "mnrl"})
    with pytest.raises(
        SbertError,
        match=r"'regression': a has .*; it needs anchor, positive and score columns; name yours with --columns",
    ):
        sbert.train(model, str(tmp_path / "o"), datasets={"a": {"q": ["x"], "d": ["y"]}},
                    objectives={"a": "regression"}, columns={"a": "anchor=q,positive=d"}, device="cpu")  # fmt: skip


def test_recipe_takes_sampling_and_table_specs(tables, tmp_path):
    recipe = tmp_path / "r.toml"
    recipe.write_text(
        'model = "m"\noutput = "out"\n[[stage]]\nsampling = "proportional"\n'
        f'objectives = [{{name = "mnrl", train = "csv[columns=anchor=q,positive=doc]:{tables["faq"]}"}}]\n',
        encoding="utf-8",
    )
    config = load_config(recipe)
    assert config.stages[0].sampling == "proportional"
    assert config.stages[0].objectives[0].train == f"csv[columns=anchor=q,positive=doc]:{tables['faq']}"
    recipe.write_text(recipe.read_text().replace('"proportional"', '"shuffled"'), encoding="utf-8")
    with pytest.raises(SbertError, match="sampling='shuffled': use round-robin or proportional"):
        load_config(recipe)


def test_several_dev_sets_pick_the_best_by_their_mean_or_a_named_metric(tiny_dirs, tables, tmp_path):
    lines = (STSB / "sts-dev.csv").read_text(encoding="utf-8").splitlines()
    devs = []
    for name, part in (("a", lines[:40]), ("b", lines[40:80])):
        (tmp_path / f"{name}.csv").write_text("\n".join(part) + "\n", encoding="utf-8")
        devs.append(f"stsb:{tmp_path / name}.csv")
    common = dict(datasets={"faq": f"csv:{tables['faq']}"}, objectives={"faq": "mnrl"},
                  columns={"faq": "anchor=q,positive=doc"}, batch_size=16, eval_steps=2, device="cpu",
                  show_progress=False)  # fmt: skip
    sbert.train(str(tiny_dirs["bert"]), str(tmp_path / "mean"), dev=tuple(devs), **common)
    evals = [r for r in records(tmp_path / "mean") if r["event"] == "eval"]
    assert evals and all(r["metric"] == "mean" for r in evals)
    for r in evals:
        spearman = [r["scores"][f"{d}:spearman"] for d in devs]
        assert r["score"] == pytest.approx(sum(spearman) / 2, abs=2e-4)
    table = (tmp_path / "mean" / "dev_curves.csv").read_text().splitlines()
    assert (
        table[0] == f'step,"selected (mean)","{devs[0]}:spearman","{devs[1]}:spearman"' and len(table) == len(evals) + 1
    )
    main(["report", "--train-log", str(tmp_path / "mean" / "train_log.jsonl"), "--output", str(tmp_path / "rep")])
    assert (tmp_path / "rep" / "dev_curves.png").stat().st_size > 1000
    select = f"{devs[1]}:pearson"
    result = sbert.train(str(tiny_dirs["bert"]), str(tmp_path / "sel"), dev=tuple(devs), select=select, **common)
    evals = [r for r in records(tmp_path / "sel") if r["event"] == "eval"]
    assert all(r["metric"] == select and r["score"] == r["scores"][select] for r in evals)
    assert result.best_score == pytest.approx(max(r["score"] for r in evals), abs=1e-3)
    with pytest.raises(SbertError, match=r"stsb:x\.csv:pearson.: expected DEV-SPEC:METRIC with DEV-SPEC one of"):
        sbert.train(str(tiny_dirs["bert"]), str(tmp_path / "x"), dev=tuple(devs), select="stsb:x.csv:pearson", **common)
    with pytest.raises(SbertError, match=r"that dev set has no such metric \(it has cosine_spearman, cosine_pearson"):
        sbert.train(str(tiny_dirs["bert"]), str(tmp_path / "y"), dev=tuple(devs), select=f"{devs[0]}:ndcg", **common)
