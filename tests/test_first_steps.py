"""What a new user trips on: each error says where and what to type, early; each choice made for them is said."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from sbert.data import load_dataset
from sbert.errors import SbertError
from sbert.formats.model_dirs import resolve_model_dir
from tests.cli_runner import run_cli

PAIRS = (
    "sentence1,sentence2,score\nA man eats.,Someone eats.,4.6\nA cat sits.,A dog runs.,0.4\nThe sky.,Blue sky.,3.0\n"
)


def test_a_bad_byte_names_its_own_line_and_column(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(PAIRS.encode().replace(b"A cat", b"A \xffcat"))  # line 3, column 3
    with pytest.raises(SbertError, match=r"bad\.csv:3: not valid UTF-8 \(column 3\)"):
        load_dataset(f"csv[scale=0-5]:{path}")


def test_skip_bad_says_how_many_lines_it_left_out(tiny_dirs, tmp_path):
    (tmp_path / "p.csv").write_text(PAIRS.replace("0.4", "oops"), encoding="utf-8")
    result = run_cli("train", "--model", str(tiny_dirs["bert"]), "--objective", "regression", "--train",
                     f"csv[scale=0-5]:{tmp_path / 'p.csv'}", "--skip-bad", "--output", str(tmp_path / "o"),
                     "--epochs", "1", "--batch-size", "2", "--no-progress")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "2 pair-score examples (1 bad lines skipped)" in result.stderr


@pytest.mark.parametrize(("fmt", "table", "chosen"), [
    ("csv[scale=0-5]", PAIRS, "cosent"),
    ("csv", "query,document\nhow do cats sleep,Cats sleep a lot.\ncapital of France,Paris.\n", "mnrl"),
    ("csv", "anchor,positive,negative\na cat,a kitten,a car\na dog,a puppy,a tree\n", "mnrl"),
    ("csv", "sentence1,sentence2,label\na cat,a kitten,0\na dog,a tree,1\n", "classification"),
])  # fmt: skip
def test_train_without_an_objective_picks_one_from_the_columns_and_says_so(tiny_dirs, tmp_path, fmt, table, chosen):
    (tmp_path / "t.csv").write_text(table, encoding="utf-8")
    result = run_cli("train", "--model", str(tiny_dirs["bert"]), "--train", f"{fmt}:{tmp_path / 't.csv'}",
                     "--output", str(tmp_path / "o"), "--epochs", "1", "--batch-size", "2",
                     "--no-progress")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"objective {chosen} for its" in result.stderr
    assert (tmp_path / "o" / "modules.json").is_file()


def test_a_typo_in_the_objective_fails_before_any_data_is_read(tmp_path):
    started = time.monotonic()
    missing = tmp_path / "not-read-yet.csv"  # the objective is checked first: the missing file is not named
    result = run_cli("train", "--model", "all-MiniLM-L6-v2", "--objective", "consent", "--train",
                     f"csv:{missing}", "--output", str(tmp_path / "o"))  # fmt: skip
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "unknown objective 'consent'; did you mean 'cosent'?" in result.stderr
    assert str(missing) not in result.stderr and time.monotonic() - started < 10


def test_a_model_name_typo_suggests_the_name(tmp_path, monkeypatch):
    with pytest.raises(SbertError, match=r"did you mean 'all-MiniLM-L6-v2'\?"):
        resolve_model_dir("all-MiniLM-L6-V2")
    (tmp_path / "models" / "my-model").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SbertError, match=r"did you mean 'models/my-model'\?"):
        resolve_model_dir("models/my-modle")


def test_an_nli_folder_that_is_missing_is_named_without_its_split(tmp_path):
    with pytest.raises(SbertError, match=rf"{tmp_path / 'snli'}: no such folder .*split 'dev'"):
        load_dataset(f"nli:{tmp_path / 'snli'}:dev")


def test_sbert_namespace_shows_the_api_and_an_example():
    import sbert

    public = [n for n in dir(sbert) if not n.startswith("_")]
    assert not {"Any", "TYPE_CHECKING", "annotations"} & set(public)
    assert {"load", "SentenceEncoder", "CrossEncoder", "SparseEncoder"} <= set(public)
    assert "sbert.load(" in (sbert.__doc__ or "")


def test_a_log_records_what_was_chosen(tiny_dirs, tmp_path):
    (tmp_path / "t.csv").write_text(PAIRS, encoding="utf-8")
    run_cli("train", "--model", str(tiny_dirs["bert"]), "--train", f"csv[scale=0-5]:{tmp_path / 't.csv'}",
            "--output", str(tmp_path / "o"), "--epochs", "1", "--no-progress")  # fmt: skip
    card = (tmp_path / "o" / "README.md").read_text(encoding="utf-8")
    assert "cosent" in card  # the card names the objective that ran, not "auto"
    log = [json.loads(line) for line in Path(tmp_path / "o" / "train_log.jsonl").read_text().splitlines()]
    assert log


def test_serve_on_a_port_in_use_is_one_line_before_any_url(tiny_dirs):
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = run_cli("serve", "--model", str(tiny_dirs["bert"]), "--port", str(port))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and "http://" not in result.stderr
    assert f"--port {port}: cannot listen on 127.0.0.1:{port}" in result.stderr


@pytest.mark.parametrize("spec", ["ir:MISSING", "ir:MISSING:dev", "stsb:missing.csv", "nli:MISSING:dev,test"])
def test_eval_with_a_missing_task_fails_before_the_model_loads(spec, monkeypatch):
    import sbert.cli.evaluate as evaluate

    monkeypatch.setattr(evaluate, "load_encoder", lambda *a, **k: pytest.fail("the model loaded first"))
    result = run_cli("eval", "--task", spec)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"--task {spec}: " in result.stderr and "no such file or folder" in result.stderr
    named = "missing.csv" if spec.startswith("stsb") else "MISSING"  # the folder, not FOLDER:SPLIT
    assert result.stderr.rstrip().endswith(f": {named}: no such file or folder")


def test_eval_task_paths_with_a_split_pass_the_early_check(tmp_path):
    from sbert.cli.evaluate import check_task_paths

    (tmp_path / "snli").mkdir()
    check_task_paths([f"nli:{tmp_path / 'snli'}:dev", f"hf:{tmp_path / 'snli'}:train", f"ir:{tmp_path / 'snli'}"])


def test_train_cross_encoder_reads_query_keys_and_says_what_it_trained_on(tiny_dirs, tmp_path):
    rows = [{"query": f"question {i}", "document": f"answer {i}", "negative": f"other {i}"} for i in range(6)]
    table = tmp_path / "t.jsonl"
    table.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert load_dataset(f"triplets:{table}").texts == load_dataset(f"jsonl:{table}").texts  # same keys, same rows
    result = run_cli("train-cross-encoder", "--train", f"jsonl:{table}", "--model", str(tiny_dirs["bert"]),
                     "-o", str(tmp_path / "ce"), "--batch-size", "4")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "6 triplet examples; roles: anchor=query, positive=document, negative=negative" in result.stderr
    assert "trained on 6 triplet examples" in result.stderr
