"""`sbert reproduce table1|table2|table5|table7` end to end on a tiny model and a small slice of the real data."""

import json
import os

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.cli.main import main
from tests.conftest import SHARED_DATA


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    """The shared data's layout with the first lines of each file (SNLI linked whole: training samples from it)."""
    root = tmp_path_factory.mktemp("data")
    os.symlink(SHARED_DATA / "snli", root / "snli")
    sizes = {"stsbenchmark": {"sts-train.csv": 80, "sts-dev.csv": 40, "sts-test.csv": 60},
             "sst2": {"sentiment-train": 160, "sentiment-dev": 40, "sentiment-test": 60}}  # fmt: skip
    for folder, files in sizes.items():
        (root / folder).mkdir()
        for name, n in files.items():
            lines = (SHARED_DATA / folder / name).read_text(encoding="utf-8").splitlines()[:n]
            (root / folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def scores(path) -> dict[str, float]:
    return {r["key"]: r["score"] for r in json.loads(path.read_text())["runs"].values()}


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_table1_and_table5_score_every_row_and_resume(tiny_dirs, small_data, tmp_path, capsys):
    common = ["--model", str(tiny_dirs["bert"]), "--data", str(small_data), "--nli-pairs", "160", "-o", str(tmp_path)]
    assert main(["reproduce", "table1", *common]) == 0
    cells = scores(tmp_path / "table1.json")
    assert len(cells) == 5 and all(k.endswith("/STSb") for k in cells)
    assert all(-100 <= v <= 100 for v in cells.values())
    assert any("SNLI classification (160 pairs)" in k for k in cells)
    # The SNLI row is a trained model, not the starting one (Spearman alone may not tell: 10 steps keep ranks).
    start, trained = (SentenceEncoder.load(p) for p in (tiny_dirs["bert"], tmp_path / "work" / "nli-mean-160-seed0"))
    assert not np.allclose(start.encode(["a dog runs"]), trained.encode(["a dog runs"]), atol=1e-4)
    table = (tmp_path / "table1.md").read_text()
    assert "| *paper:* SBERT-NLI-base | 77.03 |" in table and "| Model | STSb |" in table
    # table5 reuses the SNLI model trained for table1 (same size and seed) and scores SST-2.
    stamp = (tmp_path / "work" / "nli-mean-160-seed0" / "modules.json").stat().st_mtime_ns
    assert main(["reproduce", "table5", *common]) == 0
    assert (tmp_path / "work" / "nli-mean-160-seed0" / "modules.json").stat().st_mtime_ns == stamp
    sst = scores(tmp_path / "table5.json")
    assert len(sst) == 5 and all(k.endswith("/SST2") and 0 <= v <= 100 for k, v in sst.items())
    assert "| *paper:* Avg. GloVe embeddings | 80.18 |" in (tmp_path / "table5.md").read_text()
    # Everything is recorded: a rerun computes nothing and gives the same table.
    assert main(["reproduce", "table1", *common]) == 0
    assert scores(tmp_path / "table1.json") == cells
    assert main(["reproduce", "table1", *common[:-2], "--nli-pairs", "48", "-o", str(tmp_path)]) == 2
    assert "other settings" in capsys.readouterr().err


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_table2_trains_bi_and_cross_encoders(tiny_dirs, small_data, tmp_path):
    args = ["reproduce", "table2", "--model", str(tiny_dirs["bert"]), "--data", str(small_data), "--seeds", "0",
            "--nli-pairs", "160", "--sts-pairs", "80", "-o", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    cells = scores(tmp_path / "table2.json")
    assert set(cells) == {"SBERT-STSb", "SBERT-NLI-STSb", "cross-encoder STSb"}
    assert all(-100 <= v <= 100 for v in cells.values())
    table = (tmp_path / "table2.md").read_text()
    assert "| SBERT-NLI-STSb |" in table and "85.35 ± 0.17" in table
    assert not list((tmp_path / "work").glob("SBERT-*"))  # trained models are removed once scored


def test_table7_times_every_row(tiny_dirs, small_data, tmp_path):
    assert main(["reproduce", "table7", "--model", str(tiny_dirs["bert"]), "--data", str(small_data),
                 "--repeats", "1", "-o", str(tmp_path)]) == 0  # fmt: skip
    cells = scores(tmp_path / "table7.json")
    assert len(cells) == 5 and all(v > 0 for v in cells.values())
    assert any("smart batching" in k for k in cells) and any("onnx-int8" in k for k in cells)
    assert "| *paper:* SBERT-base - smart batching | | 83 | 2042 |" in (tmp_path / "table7.md").read_text()


def test_reproduce_bad_input(small_data, tmp_path, capsys):
    assert main(["reproduce", "table2", "--seeds", "a,b", "-o", str(tmp_path)]) == 2
    assert "--seeds 'a,b'" in capsys.readouterr().err
    assert main(["reproduce", "table2", "--sts-pairs", "0", "-o", str(tmp_path)]) == 2
    assert "must be positive" in capsys.readouterr().err
    assert main(["reproduce", "table1", "--data", str(tmp_path / "none"), "-o", str(tmp_path / "o")]) == 2
    assert "none/snli" in capsys.readouterr().err
    assert main(["reproduce", "table1", "--data", str(small_data), "--sts", "sts:/nope", "-o", str(tmp_path)]) == 2
    assert "/nope: not a directory" in capsys.readouterr().err
