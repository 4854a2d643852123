"""Cross-validated fine-tuning (k-fold, leave-one-topic-out), topic-pairs data, cross-encoder training CLI."""

import json

import pytest

from sbert.cli.main import main
from sbert.data import load_dataset
from sbert.data.common import DataFormatError
from sbert.errors import SbertError
from sbert.reproduce.crossval import by_topic, kfold
from tests.conftest import SHARED_DATA


def sts_rows(n: int, skip: int = 0) -> list[tuple[str, str, str]]:
    """(s1, s2, score 0-5) from the real STS benchmark train file."""
    lines = (SHARED_DATA / "stsbenchmark" / "sts-train.csv").read_text(encoding="utf-8").splitlines()
    cols = [line.split("\t") for line in lines[skip : skip + n]]
    return [(c[5], c[6], c[4]) for c in cols]


def write_topic_folder(folder, topics: dict[str, list[tuple[str, str, str]]]) -> None:
    """The AFS layout: one CSV per topic, sentences quoted (they contain commas)."""
    folder.mkdir()
    for topic, rows in topics.items():
        body = "".join(f'"{a.replace(chr(34), "")}","{b.replace(chr(34), "")}",{s}\n' for a, b, s in rows)
        (folder / f"{topic}.csv").write_text("sentence_1,sentence_2,regression_label\n" + body, encoding="utf-8")


def test_kfold_holds_every_row_out_once_and_is_seeded():
    folds = kfold(23, 5, seed=3)
    held = sorted(r for f in folds for r in f.test)
    assert held == list(range(23)) and all(set(f.train).isdisjoint(f.test) for f in folds)
    assert all(len(f.train) + len(f.test) == 23 for f in folds) and {len(f.test) for f in folds} == {4, 5}
    assert kfold(23, 5, seed=3) == folds and kfold(23, 5, seed=4) != folds
    with pytest.raises(SbertError, match="--folds 1"):
        kfold(23, 1, seed=0)


def test_by_topic_holds_out_one_topic_per_fold():
    groups = ("guns", "death", "guns", "marriage", "death", "guns")
    folds = by_topic(groups)
    assert [f.name for f in folds] == ["death", "guns", "marriage"]
    assert folds[1].test == [0, 2, 5] and folds[1].train == [1, 3, 4]
    with pytest.raises(SbertError, match="at least two topics"):
        by_topic(("guns", "guns"))


def test_topic_groups_and_fold_cap(tiny_dirs, tmp_path, capsys):
    folds = by_topic(("a", "b", "c", "d", "e"), topic_groups=2)
    assert [f.name for f in folds] == ["a+c+e", "b+d"] and folds[0].test == [0, 2, 4]
    with pytest.raises(SbertError, match="--topic-groups 9"):
        by_topic(("a", "b"), topic_groups=9)
    write_topic_folder(tmp_path / "afs", {"a": sts_rows(12), "b": sts_rows(12, skip=12), "c": sts_rows(12, skip=24)})
    args = ["crossval", "--data", f"topic-pairs:{tmp_path / 'afs'}", "--model", str(tiny_dirs["bert"]),
            "--by-topic", "--output", str(tmp_path / "out"), "--batch-size", "8", "--max-folds", "1"]  # fmt: skip
    assert main(args) == 0
    record = json.loads((tmp_path / "out" / "crossval.json").read_text())
    assert list(record["folds"]) == ["a"]  # capped at one fold
    assert "mean of 1 of 3 folds" in (tmp_path / "out" / "crossval.md").read_text()
    assert main([*args[:-2], "--max-folds", "2"]) == 0  # a larger cap goes on from where it stopped
    assert list(json.loads((tmp_path / "out" / "crossval.json").read_text())["folds"]) == ["a", "b"]
    without_topics = [a for a in args if a != "--by-topic"]
    assert main([*without_topics, "--topic-groups", "2", "-o", str(tmp_path / "o2")]) == 2
    assert "--topic-groups needs --by-topic" in capsys.readouterr().err


def test_topic_pairs_reader_folder_file_and_errors(tmp_path):
    write_topic_folder(tmp_path / "afs", {"gun_control": sts_rows(5), "death_penalty": sts_rows(3, skip=5)})
    data = load_dataset(f"topic-pairs:{tmp_path / 'afs'}")
    assert len(data) == 8 and data.groups == ("death_penalty",) * 3 + ("gun_control",) * 5
    assert data.texts[3][0] == sts_rows(1)[0][0].replace('"', "") and data.labels[3] == float(sts_rows(1)[0][2]) / 5
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("Topic\tS1\tS2\tScore\nx\ta, b\tc\t4\ny\td\te\t1\n", encoding="utf-8")
    data = load_dataset(f"topic-pairs:{tsv}")
    assert data.texts == [("a, b", "c"), ("d", "e")] and data.groups == ("x", "y") and data.labels == [0.8, 0.2]
    tsv.write_text("topic\ts1\ts2\tscore\nx\ta\tc\t4\ny\td\te\tsix\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"pairs.tsv:3: score 'six'"):
        load_dataset(f"topic-pairs:{tsv}")
    tsv.write_text("s1\ts2\tscore\na\tb\t1\n", encoding="utf-8")  # one file needs a topic column
    with pytest.raises(DataFormatError, match=r"pairs.tsv:1: the header must name topic"):
        load_dataset(f"topic-pairs:{tsv}")


def test_crossval_cli_by_topic_resumes_and_refuses_other_settings(tiny_dirs, tmp_path, capsys):
    write_topic_folder(tmp_path / "afs", {"a": sts_rows(24), "b": sts_rows(16, skip=24), "c": sts_rows(12, skip=40)})
    args = ["crossval", "--data", f"topic-pairs:{tmp_path / 'afs'}", "--model", str(tiny_dirs["bert"]),
            "--by-topic", "--output", str(tmp_path / "out"), "--batch-size", "8"]  # fmt: skip
    assert main(args) == 0
    record = json.loads((tmp_path / "out" / "crossval.json").read_text())
    assert {n: (f["train"], f["test"]) for n, f in record["folds"].items()} == {
        "a": (28, 24), "b": (36, 16), "c": (40, 12)
    }  # fmt: skip
    assert -100 <= record["summary"]["spearman"] <= 100 and record["summary"]["folds"] == 3
    assert "| **mean of 3 of 3 folds** |" in (tmp_path / "out" / "crossval.md").read_text()
    assert record["settings"]["folds"] == 3  # the topics, not the --folds default
    assert all("spearman_before" in f for f in record["folds"].values())
    assert "a: Spearman" in capsys.readouterr().err  # one progress line per fold
    assert not (tmp_path / "out" / "work").exists()  # fold models are deleted once scored, then the folder
    # A rerun finds every fold done and trains nothing: the stored seconds stay as they were.
    assert main(args) == 0
    assert json.loads((tmp_path / "out" / "crossval.json").read_text()) == record
    assert main([*args, "--lr", "1e-4"]) == 2
    assert "other settings" in capsys.readouterr().err


def test_crossval_cli_kfold_cross_encoder_and_bad_input(tiny_dirs, tmp_path, capsys):
    rows = sts_rows(30)
    (tmp_path / "train.csv").write_text("".join(f"g\tx\t0\t0\t{s}\t{a}\t{b}\n" for a, b, s in rows), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["crossval", "--data", f"stsb:{tmp_path / 'train.csv'}", "--model", str(tiny_dirs["bert"]),
                 "--folds", "3", "--cross-encoder", "--output", str(out)]) == 0  # fmt: skip
    record = json.loads((out / "crossval.json").read_text())
    assert [f["test"] for f in record["folds"].values()] == [10, 10, 10] and record["settings"]["cross_encoder"]
    assert main(["crossval", "--data", f"stsb:{tmp_path / 'train.csv'}", "--by-topic", "-o", str(tmp_path / "o2"),
                 "--model", str(tiny_dirs["bert"])]) == 2  # fmt: skip
    assert "no topics" in capsys.readouterr().err
    assert main(["crossval", "--data", f"nli:{SHARED_DATA / 'snli'}", "-o", str(tmp_path / "o3")]) == 2
    assert "needs scored pairs" in capsys.readouterr().err


def test_train_cross_encoder_cli_saves_and_scores(tiny_dirs, tmp_path, capsys):
    rows = sts_rows(32)
    (tmp_path / "train.csv").write_text("".join(f"g\tx\t0\t0\t{s}\t{a}\t{b}\n" for a, b, s in rows), encoding="utf-8")
    spec = f"stsb:{tmp_path / 'train.csv'}"
    args = ["train-cross-encoder", "--train", spec, "--dev", spec, "--model", str(tiny_dirs["bert"]),
            "--output", str(tmp_path / "cross"), "--device", "cpu"]  # fmt: skip
    assert main(args) == 0
    assert "spearman" in capsys.readouterr().out
    assert main(["eval", "--model", f"cross:{tmp_path / 'cross'}", "--task", spec]) == 0
    assert main(args) == 2 and "already exists" in capsys.readouterr().err
    bad = ["train-cross-encoder", "--train", f"stsb:{tmp_path / 'nope.csv'}", "-o", str(tmp_path / "c2")]
    assert main(bad) == 2 and "nope.csv: no such file" in capsys.readouterr().err


def test_score_scales_and_category_labels(tmp_path, caplog):
    tsv = tmp_path / "ukp.tsv"
    tsv.write_text("topic\ts1\ts2\tlabel\nx\ta\tb\tHS\nx\tc\td\tNS\ny\te\tf\tDTORCD\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"ukp.tsv:2: score 'HS' is not a number; for category labels"):
        load_dataset(f"topic-pairs:{tsv}")
    data = load_dataset(f"topic-pairs[labels=HS:1,SS:0.67,NS:0.33,DTORCD:0]:{tsv}")
    assert data.labels == [1.0, 0.33, 0.0] and data.groups == ("x", "x", "y")
    with pytest.raises(DataFormatError, match=r"ukp.tsv:4: score 'DTORCD' is not a number in the scale"):
        load_dataset(f"topic-pairs[labels=HS:1,NS:0]:{tsv}")
    bws = tmp_path / "bws.tsv"
    bws.write_text("topic\ts1\ts2\tscore\nx\ta\tb\t0.9\ny\tc\td\t0.25\n", encoding="utf-8")
    with caplog.at_level("WARNING", logger="sbert.data.scores"):
        assert load_dataset(f"topic-pairs:{bws}").labels == [0.9, 0.25]  # detected: a 0-1 scale
    assert any("0-1 scale" in r.getMessage() for r in caplog.records)
    assert load_dataset(f"topic-pairs[scale=0-5]:{bws}").labels == pytest.approx([0.18, 0.05])
    assert load_dataset(f"topic-pairs[scale=0-1]:{bws}").labels == [0.9, 0.25]
    with pytest.raises(DataFormatError, match="unknown option 'scael'"):
        load_dataset(f"topic-pairs[scael=0-1]:{bws}")
    with pytest.raises(DataFormatError, match="takes no options"):
        load_dataset(f"stsb[scale=0-1]:{bws}")
