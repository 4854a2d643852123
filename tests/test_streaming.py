"""encode_to_disk: same rows as encode, resume after damage or kill -9, refusal to mix settings."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.errors import SbertError
from sbert.scale.streaming import encode_to_disk, load_shards, shard_path

TEXTS = [f"sentence number {i} about {['cats', 'dogs', 'music', 'rain'][i % 4]}" for i in range(230)]


@pytest.fixture(scope="module")
def saved(tiny_dirs, tmp_path_factory):
    path = tmp_path_factory.mktemp("stream") / "model"
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(path)
    return path


@pytest.fixture(scope="module")
def model(saved) -> SentenceEncoder:
    return SentenceEncoder.load(saved, device="cpu")


def test_shards_hold_the_rows_of_encode_in_order(model, tmp_path):
    rows = encode_to_disk(model, iter(TEXTS), tmp_path / "out", shard_size=50, show_progress=False)
    assert rows == len(TEXTS)
    assert sorted(p.name for p in (tmp_path / "out").glob("shard-*.npy"))[-1] == "shard-00004.npy"
    np.testing.assert_allclose(load_shards(tmp_path / "out"), model.encode(TEXTS), atol=1e-5)


def test_resume_redoes_only_missing_or_damaged_shards(model, tmp_path):
    out = tmp_path / "out"
    encode_to_disk(model, TEXTS, out, shard_size=50, show_progress=False)
    kept = shard_path(out, 0).stat().st_mtime_ns
    shard_path(out, 2).unlink()
    shard_path(out, 3).write_bytes(b"garbage")
    encode_to_disk(model, TEXTS, out, shard_size=50, show_progress=False)
    assert shard_path(out, 0).stat().st_mtime_ns == kept
    np.testing.assert_allclose(load_shards(out), model.encode(TEXTS), atol=1e-5)


def test_other_settings_are_refused(model, tmp_path):
    encode_to_disk(model, TEXTS[:60], tmp_path / "out", shard_size=50, show_progress=False)
    with pytest.raises(SbertError, match="shard_size"):
        encode_to_disk(model, TEXTS[:60], tmp_path / "out", shard_size=40, show_progress=False)
    with pytest.raises(SbertError, match="normalize"):
        encode_to_disk(model, TEXTS[:60], tmp_path / "out", shard_size=50, normalize=True, show_progress=False)


def test_unfinished_folder_is_not_loaded(model, tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(SbertError, match="not a finished"):
        load_shards(tmp_path / "out")


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_kill_mid_run_then_resume_gives_every_row_once(saved, model, tmp_path):
    corpus = tmp_path / "corpus.txt"
    texts = TEXTS * 20
    corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "sbert.cli.main", "encode", "-i", str(corpus), "-o", f"{out}/"]
    cmd += ["--model", str(saved), "--shard-size", "100", "--no-progress", "--device", "cpu"]
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not shard_path(out, 3).exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "finished before it could be killed: make the corpus longer"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(list(out.glob("shard-*.npy")))
    assert 0 < done_before < 46
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    np.testing.assert_allclose(load_shards(out), model.encode(texts), atol=1e-5)


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_two_processes_write_the_same_rows(model, tmp_path):
    encode_to_disk(model, TEXTS, tmp_path / "out", shard_size=40, processes=2, show_progress=False)
    np.testing.assert_allclose(load_shards(tmp_path / "out"), model.encode(TEXTS), atol=1e-5)


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_workers_hold_the_weights_as_the_model_was_loaded(saved, model, tmp_path):
    # dtype="bf16" rounds every Transformer weight: a worker that reloads the folder in fp32 holds another model.
    held = SentenceEncoder.load(saved, device="cpu", dtype="bf16")
    encode_to_disk(held, TEXTS, tmp_path / "out", shard_size=40, processes=2, show_progress=False)
    rows = load_shards(tmp_path / "out")
    np.testing.assert_allclose(rows, held.encode(TEXTS), atol=1e-5)
    assert np.abs(rows - model.encode(TEXTS)).max() > 1e-4  # the bf16 weights really ran
