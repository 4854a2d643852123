"""Tables as training data: csv/tsv/jsonl/parquet/hf readers, column roles, bad input, in-memory tables."""

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sbert.data import DataFormatError, from_table, load_dataset, with_option
from sbert.data.roles import infer_roles
from sbert.errors import SbertError
from sbert.losses import build_loss
from tests.conftest import SHARED_DATA

STSB = SHARED_DATA / "stsbenchmark" / "sts-dev.csv"


@pytest.fixture(scope="module")
def sts_rows() -> list[dict]:
    """The first 200 rows of the real STSb dev file, as a team's export would hold them."""
    rows = []
    for line in STSB.read_text(encoding="utf-8").splitlines()[:200]:
        cols = line.split("\t")
        rows.append({"query": cols[5], "document": cols[6], "similarity": float(cols[4])})
    return rows


@pytest.fixture(scope="module")
def exports(tmp_path_factory, sts_rows) -> dict[str, Path]:
    """The same rows in every table format."""
    import datasets

    base = tmp_path_factory.mktemp("tables")
    for name, delimiter in (("csv", ","), ("tsv", "\t")):
        with (base / f"sts.{name}").open("w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, list(sts_rows[0]), delimiter=delimiter)
            writer.writeheader()
            writer.writerows(sts_rows)
    (base / "sts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sts_rows), encoding="utf-8")
    pq.write_table(pa.Table.from_pylist(sts_rows), base / "sts.parquet")
    dataset = datasets.Dataset.from_list(sts_rows)
    dataset.save_to_disk(str(base / "hf_single"))
    datasets.DatasetDict({"train": dataset, "test": dataset.select(range(5))}).save_to_disk(str(base / "hf_dict"))
    return {"csv": base / "sts.csv", "tsv": base / "sts.tsv", "jsonl": base / "sts.jsonl",
            "parquet": base / "sts.parquet", "hf": base / "hf_single", "hf_dict": base / "hf_dict"}  # fmt: skip


def test_every_format_reads_the_rows_the_stsb_reader_reads(exports):
    reference = load_dataset(f"stsb:{STSB}")
    specs = [f"{fmt}[scale=0-5]:{exports[fmt]}" for fmt in ("csv", "tsv", "jsonl", "parquet", "hf")]
    specs.append(f"hf[scale=0-5]:{exports['hf_dict']}:train")
    for spec in specs:
        dataset = load_dataset(spec)
        assert dataset.kind == "pair-score", spec
        assert dataset.texts == reference.texts[:200], spec
        assert dataset.labels == pytest.approx(reference.labels[:200]), spec
        assert "anchor=query, positive=document, score=similarity" in dataset.source


def test_roles_from_names_explicit_and_by_position():
    roles = infer_roles(["id", "question", "answer", "negative_1", "negative_2", "label"], [], "", "t")
    assert (roles.anchor, roles.positive, roles.negatives, roles.label) == (
        "question",
        "answer",
        ("negative_1", "negative_2"),
        "label",
    )
    assert roles.ignored == ("id",)
    explicit = infer_roles(["q", "doc", "rating"], ["q", "doc"], "anchor=q,positive=doc,score=rating", "t")
    assert explicit.describe() == "anchor=q, positive=doc, score=rating"
    positional = infer_roles(["a", "b", "c", "n"], ["a", "b", "c"], "", "t")
    assert positional.texts == ("a", "b", "c") and positional.by_position and positional.ignored == ("n",)
    with pytest.raises(DataFormatError, match=r"t: no column 'rating' \(columns: q, doc\); --columns ROLE=COLUMN"):
        infer_roles(["q", "doc"], ["q", "doc"], "anchor=q,score=rating", "t")
    with pytest.raises(DataFormatError, match="expected ROLE=COLUMN"):
        infer_roles(["q"], ["q"], "query=q", "t")


def test_kinds_follow_the_roles(tmp_path):
    triplets = from_table({"anchor": ["a", "b"], "positive": ["c", "d"], "negative": ["e", "f"]})
    assert triplets.kind == "triplet" and triplets.texts[1] == ("b", "d", "f")
    nli = from_table({"premise": ["a", "b", "c"], "hypothesis": ["d", "e", "f"],
                      "label": ["contradiction", "entailment", "neutral"]})  # fmt: skip
    assert nli.kind == "pair-class" and nli.label_names == ("entailment", "neutral", "contradiction")
    assert nli.labels == [2.0, 0.0, 1.0]
    ints = from_table({"sentence1": ["a", "b"], "sentence2": ["c", "d"], "label": [0, 2]})
    assert ints.labels == [0.0, 2.0] and ints.label_names == ("0", "1", "2")
    pairs = from_table({"query": ["a"], "document": ["b"]})
    assert pairs.kind == "pair" and pairs.labels is None
    texts = from_table({"text": ["one", "two"]})
    assert texts.kind == "text" and texts.texts == [("one",), ("two",)]


def test_pandas_and_datasets_objects_give_the_same_dataset(sts_rows):
    import datasets
    import pandas as pd

    frame = from_table(pd.DataFrame(sts_rows), scale="0-5")
    hf = from_table(datasets.Dataset.from_list(sts_rows), scale="0-5")
    assert frame.texts == hf.texts and frame.labels == pytest.approx(hf.labels)
    with pytest.raises(DataFormatError, match="a list is not a table"):
        from_table([1, 2])


def test_bad_rows_name_file_line_and_column(tmp_path):
    path = tmp_path / "faq.csv"
    path.write_text("question,answer,score\nq1,a1,0.5\nq2,,0.2\nq3,a3,4\nq4,a4\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=rf"{path}:5: expected 3 fields as the header has, found 2"):
        load_dataset(f"csv:{path}")  # the file's shape is checked before its values
    path.write_text("question,answer,score\nq1,a1,0.5\nq2,,0.2\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=rf"{path}:3: column 'answer' is '', expected text"):
        load_dataset(f"csv:{path}")
    path.write_text("question,answer,score\nq1,a1,0.5\nq2,,0.2\nq3,a3,4\nq4,a4\n", encoding="utf-8")
    skipped = load_dataset(f"csv:{path}", skip_bad=True)
    assert skipped.texts == [("q1", "a1")] and skipped.skipped == 3
    path.write_text("question,answer,score\nq1,a1,0.5\nq3,a3,4\n", encoding="utf-8")
    with pytest.raises(
        DataFormatError,
        match=r"faq.csv:3: score '4' in column 'score' is not a number in \[0, 1\]; give the range in the spec, "
        r"e.g. csv\[scale=0-4\]:.*faq.csv$",
    ):
        load_dataset(f"csv:{path}")
    assert load_dataset(f"csv[scale=0-5]:{path}").labels == pytest.approx([0.1, 0.8])


def test_a_table_without_the_needed_roles_says_which(tmp_path):
    path = tmp_path / "clicks.csv"
    path.write_text("query,document,clicks\nq,d,3\n", encoding="utf-8")
    dataset = load_dataset(f"csv:{path}")
    with pytest.raises(
        SbertError,
        match=r"'regression': csv:.* columns: query, document, clicks; it needs anchor, positive and score columns; "
        r"name yours with --columns anchor=COLUMN,positive=COLUMN,score=COLUMN",
    ):
        build_loss("regression", 8, dataset)
    assert load_dataset(with_option(f"csv:{path}", "columns", "score=clicks").replace("]", ";scale=0-10]")).labels == [
        0.3
    ]
    (tmp_path / "ids.csv").write_text("id,count\n1,2\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"no anchor column \(columns: id, count"):
        load_dataset(f"csv:{tmp_path / 'ids.csv'}")


def test_wrong_types_layouts_and_empty_sets(tmp_path, exports):
    pq.write_table(pa.table({"query": ["a"], "document": [3]}), tmp_path / "t.parquet")
    with pytest.raises(DataFormatError, match=r"t.parquet: column 'document' holds int64, expected text"):
        load_dataset(f"parquet:{tmp_path / 't.parquet'}")
    pq.write_table(pa.table({"query": ["a"], "document": ["b"], "score": ["high"]}), tmp_path / "s.parquet")
    with pytest.raises(DataFormatError, match=r"column 'score' holds string, expected numbers"):
        load_dataset(f"parquet:{tmp_path / 's.parquet'}")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "data.txt").write_text("x")
    with pytest.raises(DataFormatError, match="not a datasets save_to_disk folder"):
        load_dataset(f"hf:{tmp_path / 'other'}")
    with pytest.raises(DataFormatError, match="a DatasetDict: name a split of train, test"):
        load_dataset(f"hf:{exports['hf_dict']}")
    with pytest.raises(DataFormatError, match="split 'dev' is not among train, test"):
        load_dataset(f"hf:{exports['hf_dict']}:dev")
    (tmp_path / "empty.csv").write_text("query,document\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"empty\.csv: no examples"):
        load_dataset(f"csv:{tmp_path / 'empty.csv'}")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(DataFormatError, match=r"bad\.parquet: not a Parquet file"):
        load_dataset(f"parquet:{tmp_path / 'bad.parquet'}")
    with pytest.raises(DataFormatError, match="unknown option 'labels'; known: columns, scale, split"):
        load_dataset(f"csv[labels=a:1]:{tmp_path / 'empty.csv'}")


def test_jsonl_rows_missing_keys_and_quoted_csv_lines(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"anchor": "a", "positive": "b"}\n{"anchor": "c"}\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"p.jsonl:2: no 'positive' key"):
        load_dataset(f"jsonl:{path}")
    quoted = tmp_path / "q.csv"
    quoted.write_text('anchor,positive\n"two\nlines",b\nc,d,e\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"q.csv:4: expected 2 fields"):  # the row after a 2-line field
        load_dataset(f"csv:{quoted}")
    assert load_dataset(f"csv:{quoted}", skip_bad=True).texts == [("two\nlines", "b")]


def test_the_fast_csv_reader_equals_the_careful_one_and_steps_aside_when_lines_and_rows_differ(exports, tmp_path):
    from sbert.data.table_sources import _arrow_delimited, python_delimited

    for name, delimiter in (("csv", ","), ("tsv", "\t")):
        fast = _arrow_delimited(exports[name], delimiter)
        assert fast is not None
        careful = python_delimited(exports[name], delimiter, False)
        assert (fast.columns, fast.lines) == (careful.columns, careful.lines)
    tricky = tmp_path / "tricky.csv"
    # a BOM, a quoted newline, a blank line
    tricky.write_text('\ufeffquery,document\n"two\nlines",b\n\nc,d\n', encoding="utf-8")
    assert _arrow_delimited(tricky, ",") is None
    table = load_dataset(f"csv:{tricky}")
    assert table.texts == [("two\nlines", "b"), ("c", "d")]
    bad = tmp_path / "bad.csv"
    bad.write_text("query,document\na,b\nc,d,e\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad\.csv:3: expected 2 fields as the header has, found 3"):
        load_dataset(f"csv:{bad}")


def test_the_fast_jsonl_reader_equals_the_careful_one_and_steps_aside_on_anything_unusual(exports, tmp_path):
    from sbert.data.table_sources import _arrow_jsonl, python_jsonl

    fast = _arrow_jsonl(exports["jsonl"])
    assert fast is not None
    careful = python_jsonl(exports["jsonl"], False)
    assert (fast.columns, fast.lines) == (careful.columns, careful.lines)
    unusual = {"missing": '{"query": "a", "document": "b"}\n{"query": "c"}\n',
               "null": '{"query": "a", "document": null}\n',
               "blank": '{"query": "a", "document": "b"}\n\n{"query": "c", "document": "d"}\n',
               "mixed": '{"query": "a", "document": "b"}\n{"query": 3, "document": "d"}\n'}  # fmt: skip
    for name, text in unusual.items():
        (tmp_path / f"{name}.jsonl").write_text(text, encoding="utf-8")
        assert _arrow_jsonl(tmp_path / f"{name}.jsonl") is None, name
    with pytest.raises(DataFormatError, match=r"missing\.jsonl:2: no 'document' key, which the first row has"):
        load_dataset(f"jsonl:{tmp_path / 'missing.jsonl'}")
    assert load_dataset(f"jsonl:{tmp_path / 'blank.jsonl'}").texts == [("a", "b"), ("c", "d")]


def test_jsonl_dates_stay_text_whichever_reader_reads_them(tmp_path):
    # pyarrow reads "2024-01-01" as a timestamp; json.loads keeps it text: the roles must not depend on the reader
    rows = '{"date": "2024-01-01", "title": "a title", "body": "a body"}\n' * 3
    (tmp_path / "plain.jsonl").write_text(rows, encoding="utf-8")
    (tmp_path / "blank.jsonl").write_text(rows + "\n", encoding="utf-8")  # a blank line: the careful reader
    plain, blank = (load_dataset(f"jsonl:{tmp_path / name}.jsonl") for name in ("plain", "blank"))
    assert plain.kind == blank.kind == "triplet"
    assert plain.texts == blank.texts == [("2024-01-01", "a title", "a body")] * 3


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_bare_teacher_score_on_line_1_is_that_lines_error(tmp_path, fmt):
    """The label column's kind comes from all its cells: line 1 gets line 3's error, not a silent triplet read."""
    from sbert.data import load_dataset

    rows = [{"query": f"q {i}", "positive": f"p {i}", "negative": f"n {i}", "label": [3.0, 1.0]} for i in range(4)]
    rows[0]["label"] = 9.5
    path = tmp_path / f"distill.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        lines = ["query,positive,negative,label"] + [f'{r["query"]},{r["positive"]},{r["negative"]},"{r["label"]}"'
                                                     for r in rows]  # fmt: skip
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    where = f"distill\\.{fmt}:{1 if fmt == 'jsonl' else 2}"  # the CSV's header is line 1
    with pytest.raises(SbertError, match=rf"{where}: column 'label' holds '?9\.5'?, expected a list of 2 teacher"):
        load_dataset(f"{fmt}:{path}")
    data = load_dataset(f"{fmt}:{path}", skip_bad=True)
    assert data.kind == "distill" and len(data.texts) == 3 and data.labels == [[3.0, 1.0]] * 3
