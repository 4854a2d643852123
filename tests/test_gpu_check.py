"""The one GPU entry point, rehearsed end to end on the CPU: a short GPU session must not be spent
finding out that the script itself is broken."""

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))
from gpu_summary import summary


@pytest.mark.e2e
def test_gpu_check_smoke_runs_every_step_and_prints_one_table(tmp_path):
    out = tmp_path / "gpu-check"
    run = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu" / "gpu_check.sh"), "--smoke", str(out)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    steps = [line.split("\t") for line in (out / "steps.tsv").read_text().splitlines()]
    assert [(name, rc) for name, rc, *_ in steps] == [("tests", "0"), ("encode", "0"), ("profile", "0"), ("train", "0")]
    assert json.loads((out / "gpu_encode.json").read_text()) and json.loads((out / "gpu_train.json").read_text())
    table = (out / "summary.md").read_text()
    assert run.stdout.rstrip().endswith(table.rstrip())  # the table is what it prints last
    assert "| tests | ok |" in table and " skipped, " in table  # the cuda tests skip on a CPU
    assert "| MiniLM-L6 | sts | sbert fp32 |" in table and "| a | sbert fp32 |" in table
    assert "### Profile" in table and "| train MiniLM fp32 mnrl b16 |" in table


def test_summary_keeps_the_rows_of_a_step_killed_by_its_timeout(tmp_path):
    (tmp_path / "steps.tsv").write_text("train\t124\t540\t540\n")
    rows = [{"row": "a", "setting": "sbert bf16", "pairs_per_s": 812.5, "seconds": 9.1, "stsb_test": 85.2}]
    log = ["loading...", json.dumps(rows[0]), "{'train_runtime': '2.6'}", '{"row": "a", "setting": "fit f']
    (tmp_path / "train.log").write_text("\n".join(log) + "\n")
    table = summary(tmp_path)
    assert "| train | timed out (540 s) | 540 | 1 result rows |" in table
    assert "| a | sbert bf16 | 812 | 9.1 | 85.20 | - | - |" in table


def test_summary_reads_pytest_closing_line_quiet_or_not(tmp_path):
    (tmp_path / "steps.tsv").write_text("tests\t1\t60\t170\n")
    (tmp_path / "tests.log").write_text("FAILED x.py::t\n===== 1 failed, 9 passed, 300 deselected in 5.1s =====\n")
    assert "| tests | failed (rc 1) | 60 | 1 failed, 9 passed, 300 deselected in 5.1s |" in summary(tmp_path)
    (tmp_path / "tests.log").write_text("SKIPPED [1] a.py:3: no GPU\n10 skipped, 376 deselected in 3.26s\n")
    assert "| 10 skipped, 376 deselected in 3.26s |" in summary(tmp_path)


def test_summary_shows_the_tables_of_the_sparse_and_multivector_steps(tmp_path):
    (tmp_path / "steps.tsv").write_text("multivector\t0\t200\t300\n")
    log = [
        "Loading weights: 100%",
        "sbert: same token counts (9 vectors); max abs diff 1.0e-07; token cosine mean 1",
        "| engine (cuda) | documents/s | queries/s | peak RSS (GiB) | rounds |",
        "|---|---|---|---|---|",
        "| sbert | 812.0 | 640.5 | 1.20 (GPU 0.90) | 2 |",
        "",
        "sbert / sentence-transformers: documents 1.50x",
    ]
    (tmp_path / "multivector.log").write_text("\n".join(log) + "\n")
    table = summary(tmp_path)
    assert "| multivector | ok | 200 | 3 table lines |" in table
    assert "### Multivector" in table and "| sbert | 812.0 | 640.5 | 1.20 (GPU 0.90) | 2 |" in table
    assert "max abs diff 1.0e-07" in table and "documents 1.50x" in table and "Loading weights" not in table


def test_profile_counts_device_busy_time_once_where_kernels_overlap():
    from types import SimpleNamespace

    path = list(sys.path)
    try:
        from gpu_profile import busy_seconds  # its gpu_encode import puts src/ first on sys.path: undone below
    finally:
        sys.path[:] = path

    def kernel(start: float, end: float, device: str = "DeviceType.CUDA") -> SimpleNamespace:
        return SimpleNamespace(time_range=SimpleNamespace(start=start, end=end), device_type=device)

    # two streams overlap in [10, 20] and one kernel lies inside another; a CPU op in the gap does not count
    events = [kernel(0, 20), kernel(10, 30), kernel(12, 14), kernel(50, 60), kernel(30, 50, "DeviceType.CPU")]
    assert busy_seconds(events) == pytest.approx(40e-6)
    assert busy_seconds([]) == 0


def test_summary_puts_every_target_row_with_its_ratio_and_says_what_was_not_measured(tmp_path):
    encode = [
        {
            "model": "BERT-base (random)",
            "corpus": "passages",
            "run": "sentence-transformers fp16 bs256",
            "sent_s": 1000,
        },
        {"model": "BERT-base (random)", "corpus": "passages", "run": "sbert bf16", "sent_s": 2500, "ceiling_pct": 17.5},
        {"model": "MiniLM-L6", "corpus": "sts", "run": "sbert bf16", "sent_s": 90000, "x_st": 10.0},
    ]
    train = [{"row": "b16", "setting": "sbert bf16", "pairs_per_s": 300.0},
             {"row": "b16", "setting": "sbert fp32", "pairs_per_s": 400.0},
             {"row": "b16", "setting": "fit fp32", "pairs_per_s": 100.0}]  # fmt: skip
    encode = [{"x_st": 1.0, "ceiling_pct": 1.0, **r} for r in encode]  # the fields every speed row has
    (tmp_path / "encode.log").write_text("\n".join(json.dumps(r) for r in encode) + "\n")
    (tmp_path / "train.log").write_text("\n".join(json.dumps(r) for r in train) + "\n")
    table = summary(tmp_path)
    assert "| BERT-base passages bf16, % of the bf16 linear ceiling | 17.50 | 35.00 | 0.50 |" in table
    assert "| BERT-base passages bf16, x sentence-transformers fp16 bs256 | 2.50 | 3.00 | 0.83 |" in table
    assert "| MiniLM passages bf16, sentences/s | not measured | 25,000 | - |" in table
    assert "| MiniLM STS sentences bf16, x sentence-transformers' default | 10.00 | 20.00 | 0.50 |" in table
    assert "| training BERT-base b16 (best sbert), x fit fp32 | 4.00 | 4.00 | 1.00 |" in table
    assert "| training BERT-base b16, bf16 / fp32 pairs/s | 0.75 | 1.30 | 0.58 |" in table
    assert "| cached MNRL (best mini-batch) / plain MNRL pairs/s at 1,024 | not measured | 0.40 | - |" in table
    assert table.splitlines()[2].startswith("- commit ")
