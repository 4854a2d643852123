"""Streamed tables (`parquet[stream=N]:`, `hf[stream=N]:`): same rows as a whole read, seeded order, resume."""

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from sbert import SentenceEncoder
from sbert.data import DataFormatError, load_dataset
from sbert.data.streaming import StreamedDataset, _shuffled
from sbert.training import Objective, Stage, TrainConfig, Trainer
from tests.conftest import SHARED_DATA

STSB = SHARED_DATA / "stsbenchmark" / "sts-dev.csv"


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, Path]:
    """The first 300 STSb dev rows as Parquet (row groups of 64, and a folder of two files) and as a DatasetDict."""
    import datasets

    rows = []
    for line in STSB.read_text(encoding="utf-8").splitlines()[:300]:
        cols = line.split("\t")
        rows.append({"query": cols[5], "document": cols[6], "similarity": float(cols[4]), "genre": cols[0]})
    base = tmp_path_factory.mktemp("stream")
    table = pa.Table.from_pylist(rows)
    pq.write_table(table, base / "sts.parquet", row_group_size=64)
    (base / "folder").mkdir()
    pq.write_table(table.slice(0, 100), base / "folder" / "a.parquet", row_group_size=30)
    pq.write_table(table.slice(100), base / "folder" / "b.parquet", row_group_size=70)
    dataset = datasets.Dataset.from_list(rows)
    datasets.DatasetDict({"train": dataset}).save_to_disk(str(base / "hf"))
    return {"parquet": base / "sts.parquet", "folder": base / "folder", "hf": base / "hf"}


def spec(fmt: str, path: Path, options: str = "stream=50;scale=0-5", split: str = "") -> str:
    return f"{fmt}[{options}]:{path}{split}"


@pytest.mark.parametrize(("fmt", "key", "split"), [("parquet", "parquet", ""), ("parquet", "folder", ""),
                                                   ("hf", "hf", ":train")])  # fmt: skip
def test_each_epoch_streams_every_row_of_a_whole_read_once(tables, fmt, key, split, monkeypatch):
    # Small pieces, read in smaller parts: several Arrow slices per file, several parts per row group.
    monkeypatch.setattr("sbert.data.streaming.ARROW_PIECE_ROWS", 64)
    monkeypatch.setattr("sbert.data.streaming.PIECE_ROWS", 16)
    whole = load_dataset(spec(fmt, tables[key], "scale=0-5", split))
    streamed = load_dataset(spec(fmt, tables[key], split=split))
    assert isinstance(streamed, StreamedDataset) and streamed.stream is not None
    assert len(streamed.stream.pieces) >= 3
    assert len(streamed) == len(whole) == 300 and streamed.kind == whole.kind == "pair-score"
    assert streamed.texts == whole.texts[: len(streamed.texts)]  # the sample is the table's first rows
    expected = sorted(zip(whole.texts, whole.labels or [], strict=True))
    epochs = [list(streamed.stream.rows(seed=3, stage=0, epoch=e)) for e in (0, 1)]
    assert all(sorted(rows) == expected for rows in epochs)
    assert epochs[0] != epochs[1] and epochs[0] != sorted(epochs[0])
    assert list(streamed.stream.rows(seed=3, stage=0, epoch=0)) == epochs[0]  # (seed, stage, epoch) fixes it
    assert list(streamed.stream.rows(seed=3, stage=0, epoch=0, start=123)) == epochs[0][123:]


def test_the_buffer_bounds_how_far_ahead_the_stream_reads():
    import numpy as np

    consumed = []

    def source():
        for i in range(1000):
            consumed.append(i)
            yield (str(i),), None

    out = []
    for row in _shuffled(source(), 40, np.random.default_rng(0)):
        out.append(row)
        assert len(consumed) <= len(out) + 40
    assert sorted(int(t[0]) for t, _ in out) == list(range(1000))


def test_bad_rows_fail_before_training_with_the_tables_row_number(tables, tmp_path):
    table = pq.read_table(tables["parquet"])
    scores = table.column("similarity").to_pylist()
    scores[250] = 9.0  # in the fourth row group
    bad = tmp_path / "bad.parquet"
    pq.write_table(table.set_column(2, "similarity", pa.array(scores)), bad, row_group_size=64)
    with pytest.raises(DataFormatError, match=r"bad.parquet row 251: score 9.0 in column 'similarity'"):
        load_dataset(spec("parquet", bad))
    skipped = load_dataset(spec("parquet", bad), skip_bad=True)
    assert (len(skipped), skipped.skipped) == (299, 1)
    assert len(list(skipped.stream.rows(0, 0, 0))) == 299


def test_class_names_are_numbered_alike_in_every_piece(tmp_path):
    # The first row group holds only "neutral": numbered alone it would be class 0 there.
    labels = ["neutral"] * 10 + ["entailment", "contradiction", "neutral"] * 10
    table = pa.table({"premise": [f"p {i}" for i in range(40)], "hypothesis": [f"h {i}" for i in range(40)],
                      "label": labels})  # fmt: skip
    pq.write_table(table, tmp_path / "nli.parquet", row_group_size=10)
    streamed = load_dataset(f"parquet[stream=8]:{tmp_path / 'nli.parquet'}")
    assert streamed.label_names == ("entailment", "neutral", "contradiction")
    got = {texts[0]: label for texts, label in streamed.stream.rows(0, 0, 0)}
    assert got == {f"p {i}": float(("entailment", "neutral", "contradiction").index(y)) for i, y in enumerate(labels)}


def test_stream_options_are_checked(tables, tmp_path):
    csv = tmp_path / "a.csv"
    csv.write_text("query,document\na,b\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="stream= reads parquet: and hf: tables"):
        load_dataset(f"csv[stream=10]:{csv}")
    with pytest.raises(DataFormatError, match="shuffle buffer's size in rows"):
        load_dataset(spec("parquet", tables["parquet"], "stream=many"))
    with pytest.raises(DataFormatError, match="cannot be split into folds"):
        load_dataset(spec("parquet", tables["parquet"])).subset([0], "fold")


def streamed_config(model: Path, table: Path, out: Path, **settings) -> TrainConfig:
    stage = Stage((Objective("cosent", spec("parquet", table)),), batch_size=16, epochs=2)
    return TrainConfig(model=str(model), output=str(out), stages=(stage,), device="cpu", **settings)


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_a_streamed_table_trains_and_resumes_where_it_stopped(tiny_dirs, tables, tmp_path):
    config = streamed_config(tiny_dirs["bert"], tables["parquet"], tmp_path / "a", checkpoint_steps=7,
                             keep_checkpoints=50)  # fmt: skip
    result = Trainer(config, show_progress=False).run()
    assert result.steps == 2 * 19  # 300 rows in batches of 16, twice
    start = SentenceEncoder.load(tiny_dirs["bert"], device="cpu").state_dict()
    trained = SentenceEncoder.load(tmp_path / "a", device="cpu").state_dict()
    assert any(not torch.equal(start[k], trained[k]) for k in start)
    # Resumed mid-epoch (step 7) and in the second epoch (step 21): the same weights as the run never stopped.
    for step in (7, 21):
        out = tmp_path / f"r{step}"
        shutil.copytree(tmp_path / "a.run" / "checkpoints" / f"step-{step}",
                        Path(f"{out}.run") / "checkpoints" / f"step-{step}")  # fmt: skip
        Trainer(TrainConfig(**{**config.__dict__, "output": str(out)}), show_progress=False).run(resume=True)
        resumed = SentenceEncoder.load(out, device="cpu").state_dict()
        assert all(torch.equal(trained[k], resumed[k]) for k in trained), step


def test_the_stream_flag_folds_into_the_parquet_and_hf_specs(tables):
    from sbert.cli.main import build_parser
    from sbert.cli.train import build_config
    from sbert.errors import SbertError

    argv = ["train", "-m", "x", "-o", "y", "--stream", "500", "--objective", "cosent", "--train",
            f"parquet[scale=0-5]:{tables['parquet']}", "--objective", "mnrl", "--train", "pairs:a.tsv"]  # fmt: skip
    config = build_config(build_parser().parse_args(argv))
    assert [o.train for o in config.stages[0].objectives] == [
        f"parquet[scale=0-5;stream=500]:{tables['parquet']}",
        "pairs:a.tsv",
    ]
    argv = ["train", "-m", "x", "-o", "y", "--stream", "500", "--objective", "mnrl", "--train", "pairs:a.tsv"]
    with pytest.raises(SbertError, match="--stream reads parquet: and hf: tables"):
        build_config(build_parser().parse_args(argv))
