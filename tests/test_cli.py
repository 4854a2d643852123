"""The `sbert` command: outputs, exit codes, one-line errors (in this process; the entry point once as a subprocess)."""

from pathlib import Path

import numpy as np
import pytest

from sbert import SentenceEncoder
from tests.cli_runner import CliResult, run_cli, run_subprocess
from tests.tiny_models import CORPUS

sbert = run_cli


def assert_one_line_error(proc: CliResult, *fragments: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture(scope="module")
def bert_dir(tiny_dirs) -> Path:
    return tiny_dirs["bert"]


def test_help_lists_subcommands_and_each_has_help():
    top = sbert("--help")
    assert top.returncode == 0
    for name in ("encode", "similarity", "demo"):
        assert name in top.stdout
        assert sbert(name, "--help").returncode == 0


def test_train_help_lists_every_registered_objective():
    from sbert.backends import BACKENDS
    from sbert.losses import LOSSES
    from sbert.modules import POOLERS
    from sbert.modules.dense import ACTIVATIONS
    from sbert.names import BACKEND_NAMES, DENSE_ACTIVATIONS, OBJECTIVES, POOLER_NAMES

    assert tuple(LOSSES) == OBJECTIVES and tuple(BACKENDS) == BACKEND_NAMES
    assert tuple(POOLERS) == POOLER_NAMES and tuple(ACTIVATIONS) == DENSE_ACTIVATIONS

    # argparse wraps long help lines, at spaces and after hyphens
    text = " ".join(sbert("train", "--help").stdout.split()).replace("- ", "-")
    assert all(name in text for name in LOSSES) and "cached-mnrl" in text


def test_encode_file_matches_library(bert_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    out = tmp_path / "out.npy"
    proc = sbert("encode", "--model", str(bert_dir), "--input", str(text), "--output", str(out), "--batch-size", "3")
    assert proc.returncode == 0, proc.stderr
    expected = SentenceEncoder.load(bert_dir).encode(CORPUS)
    np.testing.assert_allclose(np.load(out), expected, atol=1e-6)


def test_encode_reads_stdin_and_keeps_blank_lines(bert_dir, tmp_path):
    out = tmp_path / "out.npy"
    proc = sbert("encode", "-m", str(bert_dir), "-i", "-", "-o", str(out), "--normalize", stdin=b"a cat\n\nthe dog\n")
    assert proc.returncode == 0, proc.stderr
    vectors = np.load(out)
    assert vectors.shape[0] == 3
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_missing_input_file(bert_dir, tmp_path):
    proc = sbert("encode", "-m", str(bert_dir), "-i", str(tmp_path / "nope.txt"), "-o", str(tmp_path / "o.npy"))
    assert_one_line_error(proc, "nope.txt", "no such file")


def test_invalid_utf8_names_the_line_and_keeps_existing_output(bert_dir, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nalso fine\nbroken \xff here\n")
    out = tmp_path / "out.npy"
    np.save(out, np.arange(3))
    proc = sbert("encode", "-m", str(bert_dir), "-i", str(bad), "-o", str(out))
    assert_one_line_error(proc, "bad.txt:3", "UTF-8")
    np.testing.assert_array_equal(np.load(out), np.arange(3))


def test_unknown_model_through_the_real_entry_point(tmp_path):
    # The one run through a new process: `python -m sbert.cli.main` exits 2 with one line, no traceback.
    text = tmp_path / "in.txt"
    text.write_text("hello\n")
    proc = run_subprocess("encode", "-m", "no-such-model", "-i", str(text), "-o", str(tmp_path / "o.npy"))
    assert_one_line_error(proc, "no-such-model", "not found")


def test_bad_batch_size_and_missing_output_folder(bert_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("hello\n")
    proc = sbert("encode", "-m", str(bert_dir), "-i", str(text), "-o", str(tmp_path / "o.npy"), "--batch-size", "0")
    assert_one_line_error(proc, "--batch-size")
    proc = sbert("encode", "-m", str(bert_dir), "-i", str(text), "-o", str(tmp_path / "missing" / "o.npy"))
    assert_one_line_error(proc, "does not exist")


def test_similarity_prints_the_cosine(bert_dir):
    proc = sbert("similarity", "-m", str(bert_dir), "a cat sat", "a cat sat")
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) == pytest.approx(1.0, abs=1e-4)


def test_demo_with_the_default_model():
    proc = sbert("demo")
    assert proc.returncode == 0, proc.stderr
    assert "Most similar pairs:" in proc.stdout and proc.stdout.count("Query:") == 3


def test_eval_writes_results_and_rejects_unknown_formats(bert_dir, tmp_path):
    from tests.conftest import SHARED_DATA

    sts = SHARED_DATA / "stsbenchmark" / "sts-dev.csv"
    proc = sbert("eval", "-m", str(bert_dir), "--task", f"stsb:{sts}", "--output", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    import json

    results = json.loads((tmp_path / "r/results.json").read_text())["tasks"][f"stsb:{sts}"]
    assert results["size"] == 1500 and -100 <= results["spearman"] <= 100
    assert "| Model | STSb | Avg. |" in (tmp_path / "r/results.md").read_text()
    proc = sbert("eval", "-m", str(bert_dir), "--task", "squad:x")
    assert_one_line_error(proc, "unknown task format 'squad'; known: stsb")
