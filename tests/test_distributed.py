"""Ray Data scale-out on a real local Ray instance: same vectors as local encode, exactly once after a kill."""

import json
import os
import signal
import threading
import time

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.cli.main import main
from sbert.search.index import SearchIndex, build_index
from tests.conftest import SHARED_DATA

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'sbert[ray]')")
pq = pytest.importorskip("pyarrow.parquet")
psutil = pytest.importorskip("psutil")

from sbert.distributed.ray_encode import encode_dataset, read_input, write_output  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    lines = (SHARED_DATA / "stsbenchmark" / "sts-train.csv").read_text(encoding="utf-8").splitlines()
    return list(dict.fromkeys(s for line in lines for s in line.split("\t")[5:7]))


def read_parquet_folder(folder) -> tuple[np.ndarray, list[str], np.ndarray]:
    table = pq.read_table(folder).sort_by("id")
    vectors = np.stack(table.column("embedding").to_numpy(zero_copy_only=False)).astype(np.float32)
    return table.column("id").to_numpy(), table.column("text").to_pylist(), vectors


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_ray_output_equals_local_encode(local_ray, tiny_dirs, sentences, tmp_path):
    rows = [{"id": 1000 + i, "text": s} for i, s in enumerate(sentences[:400])]
    (tmp_path / "in.jsonl").write_text("\n".join(json.dumps(r) for r in rows[::-1]) + "\n", encoding="utf-8")
    ds = read_input(str(tmp_path / "in.jsonl"), "text", "id", tmp_path / "staging")
    written = write_output(encode_dataset(ds, str(tiny_dirs["bert"]), batch_size=50), str(tmp_path / "out"))
    ids, texts, vectors = read_parquet_folder(tmp_path / "out")
    assert written == 400 and ids.tolist() == [r["id"] for r in rows] and texts == sentences[:400]
    model = SentenceEncoder.load(tiny_dirs["bert"], device="cpu")
    local = model.encode(sentences[:400])
    np.testing.assert_allclose(vectors, local, atol=1e-5)
    # The README's recipe: a FAISS index from the Parquet output, searchable by the same model.
    build_index(vectors, texts, tmp_path / "idx", "flat", "tiny", model.weights_digest())
    index = SearchIndex(tmp_path / "idx")
    index.check_model(model.weights_digest(), model.embedding_dimension)
    assert index.search(local[7:8], top_k=1)[0][0].id == 7
    # Each replica holds the weights as `dtype` says (SentenceEncoder.load's bf16 here).
    held = encode_dataset(ds, str(tiny_dirs["bert"]), batch_size=50, dtype="bf16")
    write_output(held, str(tmp_path / "held"))
    want = SentenceEncoder.load(tiny_dirs["bert"], device="cpu", dtype="bf16").encode(sentences[:400])
    assert np.abs(read_parquet_folder(tmp_path / "held")[2] - want).max() <= 1e-5 < np.abs(want - local).max()


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_cli_encodes_a_text_file_on_ray_with_line_numbers_as_ids(local_ray, tiny_dirs, sentences, tmp_path):
    lines = [*sentences[:50], "", *sentences[50:80]]  # a blank line keeps its number
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main(["encode", "--ray", str(tmp_path / "in.txt"), "--output", str(tmp_path / "out"),
                 "--model", str(tiny_dirs["bert"]), "--normalize"])  # fmt: skip
    assert code == 0
    ids, texts, vectors = read_parquet_folder(tmp_path / "out")
    assert ids.tolist() == list(range(81)) and texts == lines
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert main(["encode", "--ray", str(tmp_path / "in.txt"), "--output", str(tmp_path / "out")]) == 2  # exists
    assert main(["encode", "--ray", str(tmp_path / "missing.txt"), "--output", str(tmp_path / "o2")]) == 2


def _encode_workers() -> list:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        title = " ".join(process.info["cmdline"] or [])
        if title.startswith("ray::") and "EncodeActor" in title:
            found.append(process)
    return found


@pytest.mark.e2e
def test_a_killed_worker_is_retried_without_losing_or_duplicating_rows(local_ray, sentences, tmp_path):
    texts = sentences[:3000]
    ds = ray.data.from_items([{"id": i, "text": t} for i, t in enumerate(texts)])
    killed: list[int] = []
    done = threading.Event()

    def kill_one_worker_mid_run() -> None:
        deadline = time.monotonic() + 300
        while not done.is_set() and time.monotonic() < deadline:
            busy = [p for p in _encode_workers() if p.cpu_percent(interval=0.2) > 20]  # loaded and encoding
            if busy:
                time.sleep(1.0)
                if not done.is_set():
                    os.kill(busy[0].pid, signal.SIGKILL)
                    killed.append(busy[0].pid)
                return
            time.sleep(0.2)

    killer = threading.Thread(target=kill_one_worker_mid_run)
    killer.start()
    try:
        write_output(encode_dataset(ds, "all-MiniLM-L6-v2", batch_size=100), str(tmp_path / "out"))
    finally:
        done.set()
        killer.join()
    assert killed, "no encoding worker was seen running: the kill did not happen mid-run"
    ids, got_texts, vectors = read_parquet_folder(tmp_path / "out")
    assert ids.tolist() == list(range(len(texts))) and got_texts == texts  # every row exactly once
    local = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu").encode(texts[:200])
    np.testing.assert_allclose(vectors[:200], local, atol=1e-5)
