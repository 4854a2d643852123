"""Readers: the shared real data in place, and tiny fixtures of the other formats."""

import json

import pytest

from sbert.data import NLI_LABELS, DataFormatError, load_dataset
from tests.conftest import SHARED_DATA

STSB = SHARED_DATA / "stsbenchmark"
SNLI = SHARED_DATA / "snli"


@pytest.mark.parametrize("split,count", [("train", 5749), ("dev", 1500), ("test", 1379)])
def test_stsb_splits_have_the_published_sizes(split, count):
    data = load_dataset(f"stsb:{STSB / f'sts-{split}.csv'}")
    assert len(data) == count and data.kind == "pair-score"
    assert all(0 <= y <= 1 for y in data.labels)


def test_snli_senteval_layout_with_split_names():
    dev = load_dataset(f"nli:{SNLI}:dev")
    both = load_dataset(f"nli:{SNLI}:dev,test")
    assert len(dev) == 9842 and len(both) == 9842 + 9824
    assert dev.label_names == NLI_LABELS and set(dev.labels) == {0.0, 1.0, 2.0}


def test_nli_triplets_pair_entailment_with_contradiction(tmp_path):
    (tmp_path / "s1.x").write_text("p1\np1\np1\np2\n")
    (tmp_path / "s2.x").write_text("e1\nn1\nc1\ne2\n")
    (tmp_path / "labels.x").write_text("entailment\nneutral\ncontradiction\nentailment\n")
    data = load_dataset(f"nli-triplets:{tmp_path}")
    assert data.texts == [("p1", "e1", "c1")]  # p2 has no contradiction: no triplet


def test_stsb_bad_lines_name_file_and_line(tmp_path):
    path = tmp_path / "bad.csv"
    good = "g\tf\t2012\t1\t3.0\tA man.\tA person."
    path.write_text(f"{good}\ng\tf\t2012\t2\tthree\tA.\tB.\nonly\ttwo\n{good}\n")
    with pytest.raises(DataFormatError, match=r"bad\.csv:2: score 'three'"):
        load_dataset(f"stsb:{path}")
    data = load_dataset(f"stsb:{path}", skip_bad=True)
    assert len(data) == 2 and data.skipped == 2


def test_stsb_score_out_of_range(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("g\tf\t2012\t1\t7.5\tA.\tB.\n")
    with pytest.raises(DataFormatError, match=r"s\.csv:1: score '7\.5' is not a number in \[0, 5\]"):
        load_dataset(f"stsb:{path}")


def test_sick_reads_header_and_scales(tmp_path):
    path = tmp_path / "SICK.txt"
    path.write_text(
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
        "1\tA dog runs.\tA dog is running.\t5.0\tENTAILMENT\n2\tA cat.\tA car.\t1.0\tNEUTRAL\n"
    )
    data = load_dataset(f"sick:{path}")
    assert data.texts[0] == ("A dog runs.", "A dog is running.") and data.labels == [1.0, 0.0]


def test_senteval_sts_concatenates_subsets_and_skips_blank_gold(tmp_path):
    (tmp_path / "STS.input.news.txt").write_text("a\tb\nc\td\ne\tf\n")
    (tmp_path / "STS.gs.news.txt").write_text("5\n\n2.5\n")
    (tmp_path / "STS.input.forum.txt").write_text("g\th\n")
    (tmp_path / "STS.gs.forum.txt").write_text("0\n")
    data = load_dataset(f"sts:{tmp_path}")
    assert data.texts == [("g", "h"), ("a", "b"), ("e", "f")]
    assert data.labels == [0.0, 1.0, 0.5]


def test_senteval_sts_misaligned_gold(tmp_path):
    (tmp_path / "STS.input.x.txt").write_text("a\tb\nc\td\n")
    (tmp_path / "STS.gs.x.txt").write_text("5\n")
    with pytest.raises(DataFormatError, match=r"1 lines but STS\.input\.x\.txt has 2"):
        load_dataset(f"sts:{tmp_path}")


def test_snli_jsonl_skips_no_gold_and_rejects_unknown_labels(tmp_path):
    rows = [
        {"sentence1": "a", "sentence2": "b", "gold_label": "entailment"},
        {"sentence1": "a", "sentence2": "c", "gold_label": "-"},
        {"sentence1": "a", "sentence2": "d", "gold_label": "contradiction"},
    ]
    path = tmp_path / "snli.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    data = load_dataset(f"nli:{path}")
    assert data.texts == [("a", "b"), ("a", "d")] and data.labels == [0.0, 2.0]
    path.write_text(json.dumps({"sentence1": "a", "sentence2": "b", "gold_label": "maybe"}) + "\n")
    with pytest.raises(DataFormatError, match=r"snli\.jsonl:1: gold_label 'maybe'"):
        load_dataset(f"nli:{path}")


def test_triplets_tsv_and_jsonl(tmp_path):
    (tmp_path / "t.tsv").write_text("a\tp\tn\n")
    (tmp_path / "t.jsonl").write_text(json.dumps({"anchor": "a", "positive": "p", "negative": "n"}) + "\n")
    assert load_dataset(f"triplets:{tmp_path / 't.tsv'}").texts == [("a", "p", "n")]
    assert load_dataset(f"triplets:{tmp_path / 't.jsonl'}").texts == [("a", "p", "n")]
    (tmp_path / "bad.tsv").write_text("a\tp\n")
    with pytest.raises(DataFormatError, match=r"bad\.tsv:1: expected 3"):
        load_dataset(f"triplets:{tmp_path / 'bad.tsv'}")


def test_text_skips_blank_lines(tmp_path):
    (tmp_path / "t.txt").write_text("one\n\ntwo\n")
    assert load_dataset(f"text:{tmp_path / 't.txt'}").texts == [("one",), ("two",)]


@pytest.mark.parametrize(
    "spec,message",
    [
        ("xlsx:x", "unknown format 'xlsx'; known: stsb, .*, csv, tsv, jsonl, parquet, hf"),
        ("stsb", "expected FORMAT:PATH"),
        ("stsb:/no/such/file.csv", "no such file"),
    ],
)
def test_bad_specs(spec, message):
    with pytest.raises(DataFormatError, match=message):
        load_dataset(spec)


def test_empty_dataset_is_refused(tmp_path):
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataFormatError, match="no examples"):
        load_dataset(f"stsb:{tmp_path / 'empty.csv'}")


def test_invalid_utf8_names_line(tmp_path):
    (tmp_path / "t.txt").write_bytes(b"ok\nbad \xfe\n")
    with pytest.raises(DataFormatError, match=r"t\.txt:2: not valid UTF-8"):
        load_dataset(f"text:{tmp_path / 't.txt'}")
