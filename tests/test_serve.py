"""`sbert serve` as a real process on 127.0.0.1: OpenAI compatibility, batching, limits, errors, drain."""

import base64
import concurrent.futures
import json
import signal
import socket
import time

import httpx
import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.search.index import build_index
from tests.conftest import SHARED_DATA
from tests.serve_helpers import raw_request, serve_in_thread, start_server

openai = pytest.importorskip("openai")
KEY = "test-key-123"
MODEL = "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def model() -> SentenceEncoder:
    return SentenceEncoder.load(MODEL, device="cpu")


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    lines = (SHARED_DATA / "stsbenchmark" / "sts-test.csv").read_text(encoding="utf-8").splitlines()
    return list(dict.fromkeys(line.split("\t")[5] for line in lines))[:300]


@pytest.fixture(scope="module")
def server(model, corpus, tmp_path_factory):
    base = tmp_path_factory.mktemp("serve")
    build_index(model.encode(corpus), corpus, base / "index", "flat", MODEL, model.weights_digest())
    # Two lanes (groups on the model at once): the other serving tests run the one-lane default of a
    # single-threaded test worker.
    flags = ["--model", MODEL, "--index", str(base / "index"), "--api-key", KEY, "--max-inputs", "64",
             "--max-chars", "20000", "--max-body-bytes", "200000", "--lanes", "2"]  # fmt: skip
    srv = serve_in_thread(*flags)
    yield srv
    assert srv.stop()


def post(server, path: str, body: dict, key: str | None = KEY) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.post(server.url + path, json=body, headers=headers, timeout=300)


def test_openai_client_gets_the_offline_vectors(server, model, corpus):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=KEY)
    got = client.embeddings.create(input=corpus[:10], model=MODEL)  # the client asks for base64 and decodes it
    vectors = np.array([d.embedding for d in got.data], dtype=np.float32)
    np.testing.assert_allclose(vectors, model.encode(corpus[:10]), atol=1e-5)
    assert [d.index for d in got.data] == list(range(10)) and got.model == MODEL
    assert got.usage.prompt_tokens == sum(len(ids) for ids in model.transformer.token_ids(corpus[:10])[0])
    floats = post(server, "/v1/embeddings", {"input": corpus[0], "model": MODEL, "encoding_format": "float"}).json()
    np.testing.assert_allclose(floats["data"][0]["embedding"], vectors[0], atol=1e-6)


def test_concurrent_requests_each_get_their_own_rows_in_order(server, model, corpus):
    expected = model.encode(corpus[:120])
    chunks = [list(range(i, i + 1 + i % 5)) for i in range(0, 100, 6)]

    def ask(rows: list[int]) -> np.ndarray:
        body = post(server, "/v1/embeddings", {"input": [corpus[r] for r in rows], "model": MODEL}).json()
        return np.array([d["embedding"] for d in body["data"]])

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        for rows, got in zip(chunks, pool.map(ask, chunks), strict=True):
            np.testing.assert_allclose(got, expected[rows], atol=1e-5)
    metrics = httpx.get(server.url + "/metrics", headers={"Authorization": f"Bearer {KEY}"}).text
    batches = float(metrics.split("sbert_batch_texts_count ")[1].split()[0])
    assert batches < 1 + len(chunks) + 4  # some requests shared a group (warm-up and earlier tests aside)


def test_dimensions_shortens_and_renormalizes(server, model, corpus):
    body = post(server, "/v1/embeddings", {"input": [corpus[1]], "model": MODEL, "dimensions": 64}).json()
    got = np.array(body["data"][0]["embedding"])
    full = model.encode([corpus[1]])[0][:64]
    np.testing.assert_allclose(got, full / np.linalg.norm(full), atol=1e-5)
    raw = post(server, "/v1/embeddings", {"input": "x", "model": MODEL, "encoding_format": "base64"}).json()
    assert np.frombuffer(base64.b64decode(raw["data"][0]["embedding"]), "<f4").shape == (384,)


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({"input": [], "model": MODEL}, 422, "input"),
        ({"input": 123, "model": MODEL}, 422, "input"),
        ({"input": ["ok", 5], "model": MODEL}, 422, "input"),
        ({"model": MODEL}, 422, "input: Field required"),
        ({"input": "x", "model": MODEL, "dimensions": 0}, 422, "dimensions"),
        ({"input": "x", "model": MODEL, "dimensions": 999}, 422, "exceeds"),
        ({"input": "x", "model": MODEL, "encoding_format": "int4"}, 422, "encoding_format"),
        ({"input": "x", "model": "/etc/passwd"}, 404, "not served"),
        ({"input": "x", "model": "../../models/other"}, 404, "not served"),
        ({"input": ["a"] * 65, "model": MODEL}, 413, "65 inputs"),
        ({"input": ["a" * 10_001, "b" * 10_001], "model": MODEL}, 413, "characters"),
    ],
)
def test_bad_requests_get_json_errors(server, body, status, fragment):
    response = post(server, "/v1/embeddings", body)
    assert response.status_code == status
    error = response.json()["error"]
    assert fragment in error["message"] and error["type"]


def test_api_key_is_required_and_checked(server):
    assert post(server, "/v1/embeddings", {"input": "x", "model": MODEL}, key=None).status_code == 401
    wrong = post(server, "/v1/embeddings", {"input": "x", "model": MODEL}, key="test-key-124")
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_api_key"
    assert httpx.get(server.url + "/metrics").status_code == 401
    assert httpx.get(server.url + "/health").status_code == 200  # liveness stays open


def test_malformed_json_and_huge_bodies(server):
    auth = {"Authorization": f"Bearer {KEY}"}
    status, body = raw_request(server.url, b'{"input": ["a", "b"', auth)
    assert status == 400 and "JSON" in body["error"]["message"]
    megabyte = json.dumps({"input": ["word " * 200] * 1000, "model": MODEL}).encode()  # ~1 MB
    status, body = raw_request(server.url, megabyte, auth)
    assert status == 413 and "body" in body["error"]["message"]
    # The same size without a Content-Length (chunked) is cut off while being read.
    chunks = (megabyte[i : i + 65536] for i in range(0, len(megabyte), 65536))
    response = httpx.post(
        server.url + "/v1/embeddings", content=chunks, headers={**auth, "Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert post(server, "/v1/embeddings", {"input": "still fine", "model": MODEL}).status_code == 200


def test_slow_and_vanishing_clients_do_not_block_others(server):
    host, port = server.url.removeprefix("http://").split(":")
    slow = socket.create_connection((host, int(port)))
    slow.sendall(b'POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{"inp')  # and stalls
    gone = socket.create_connection((host, int(port)))
    body = json.dumps({"input": ["a sentence"] * 50, "model": MODEL}).encode()
    head = (
        f"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    gone.sendall(head.encode() + body)
    gone.close()  # disconnects before the answer
    started = time.monotonic()
    assert post(server, "/v1/embeddings", {"input": "others are served", "model": MODEL}).status_code == 200
    assert time.monotonic() - started < 10
    slow.close()
    assert httpx.get(server.url + "/health").json()["status"] == "ok"


def test_similarity_search_and_mine(server, model, corpus):
    pairs = [[corpus[0], corpus[1]], [corpus[2], corpus[2]]]
    answer = post(server, "/similarity", {"pairs": pairs}).json()
    scores = answer["scores"]
    assert answer["similarity_fn_name"] == "cosine"
    bad = post(server, "/similarity", {"pairs": [*pairs, ["fine", ""]]})
    assert bad.status_code == 422 and "pairs[2][1] is an empty string" in bad.json()["error"]["message"]
    u, v = model.encode([corpus[0], corpus[2]]), model.encode([corpus[1], corpus[2]])
    np.testing.assert_allclose(
        scores, (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1), atol=1e-5
    )
    hits = post(server, "/search", {"query": [corpus[7], corpus[9]], "top_k": 3}).json()["results"]
    assert [r["hits"][0]["text"] for r in hits] == [corpus[7], corpus[9]] and len(hits[0]["hits"]) == 3
    mined = post(server, "/mine", {"sentences": ["a cat sits", "dogs run", "a cat is sitting"], "top_k": 1}).json()
    assert {mined["pairs"][0]["a"], mined["pairs"][0]["b"]} == {"a cat sits", "a cat is sitting"}
    assert post(server, "/search", {"query": [], "top_k": 3}).status_code == 422
    too_many = post(server, "/search", {"query": corpus[:21], "top_k": 1000})  # 21,000 hits > 20,000
    assert too_many.status_code == 413 and too_many.json()["error"]["code"] == "too_many_hits"
    assert httpx.get(server.url + "/openapi.json").status_code == 404  # a keyed server keeps its schema to itself


def test_metrics_are_prometheus_text(server):
    # its own 200 and 422 first: the test must not lean on the others' order (xdist may split the file)
    assert post(server, "/v1/embeddings", {"input": "a cat", "model": MODEL}).status_code == 200
    assert post(server, "/v1/embeddings", {"input": [], "model": MODEL}).status_code == 422
    text = httpx.get(server.url + "/metrics", headers={"Authorization": f"Bearer {KEY}"}).text
    assert 'sbert_requests_total{route="/v1/embeddings",status="200"}' in text
    assert 'sbert_requests_total{route="/v1/embeddings",status="422"}' in text
    for name in ("sbert_request_latency_seconds_bucket", "sbert_queue_wait_seconds_bucket", "sbert_batch_tokens_sum"):
        assert name in text


def wait_for_metric(url: str, line: str, timeout: float = 60.0) -> None:
    """Until the server's /metrics holds `line` (a fixed sleep lost the race on a loaded machine)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if line in httpx.get(url + "/metrics", timeout=10).text:
            return
        time.sleep(0.05)
    raise AssertionError(f"/metrics never held {line!r}")


# A request that keeps the model busy for seconds: 32 texts cut at MiniLM's 256 tokens, one 8,192-token group.
LONG_TEXTS = ["word " * 300] * 32


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_full_queue_gives_503_with_retry_after(tmp_path):
    srv = serve_in_thread("--model", MODEL, "--max-queue", "32")

    def post(texts: list[str]) -> httpx.Response:
        return httpx.post(srv.url + "/v1/embeddings", json={"input": texts, "model": MODEL}, timeout=120)

    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            busy = pool.submit(post, LONG_TEXTS)  # an idle engine starts it at once: the model is busy
            wait_for_metric(srv.url, "sbert_batch_texts_count 1.0")  # its group is on the model
            queued = pool.submit(post, ["a"] * 32)
            wait_for_metric(srv.url, "sbert_queue_texts 32.0")  # behind the running group, the whole queue
            refused = post(["b"])
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
            assert busy.result().status_code == 200 and queued.result().status_code == 200
    finally:
        assert srv.stop()


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_sigterm_drains_in_flight_requests(tmp_path):
    # A separate process: what a supervisor sees (exit status on SIGTERM, no traceback in the log).
    srv = start_server(tmp_path, "--model", MODEL)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pending = pool.submit(
            httpx.post, srv.url + "/v1/embeddings", json={"input": LONG_TEXTS, "model": MODEL}, timeout=120
        )
        time.sleep(0.5)  # the request is on the model (seconds of work) when the signal comes
        srv.process.send_signal(signal.SIGTERM)
        response = pending.result()
    assert response.status_code == 200 and len(response.json()["data"]) == len(LONG_TEXTS)
    assert srv.process.wait(timeout=60) in (0, -signal.SIGTERM)
    assert "Traceback" not in srv.log.read_text()


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_serve_refuses_bad_flags(tmp_path):
    # Separate processes: were a bad flag accepted, the server would serve on instead of exiting.
    from tests.cli_runner import run_subprocess

    for flags, fragment in [
        (["--max-inputs", "0"], "--max-inputs"),
        (["--index", str(tmp_path / "nope")], "no such folder"),
    ]:
        done = run_subprocess("serve", *flags)
        assert done.returncode == 2 and fragment in done.stderr


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_malloc_arenas_are_capped_unless_the_user_set_them():
    import os
    import subprocess
    import sys

    code = "from sbert.serve.server import limit_malloc_arenas; print(limit_malloc_arenas())"
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    run = [sys.executable, "-c", code]
    assert subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout.strip() == "True"
    env["MALLOC_ARENA_MAX"] = "4"  # the user's own setting wins
    assert subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout.strip() == "False"


@pytest.mark.e2e  # three interpreters importing the server (~30 s on 2 cores): CI runs it in the e2e step
def test_freed_activations_stay_in_the_heap_unless_the_user_set_the_thresholds():
    import os
    import subprocess
    import sys

    # Blocks of growing size, each freed before the next (a forward's activations over groups of random
    # sizes): glibc's own threshold maps each new larger one afresh, every page faulted in again.
    code = (
        "import resource, sys\n"
        "from sbert.serve.server import keep_freed_memory\n"
        "kept = keep_freed_memory() if sys.argv[1] == 'keep' else None\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "for mb in range(1, 8):\n"
        "    block = b'x' * (mb * 2**20); del block\n"  # every page written
        "print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}

    def faults(how: str, **extra: str) -> tuple[str, int]:
        run = [sys.executable, "-c", code, how]
        kept, count = subprocess.run(run, env=env | extra, capture_output=True, text=True, check=True).stdout.split()
        return kept, int(count)

    kept, few = faults("keep")
    _, many = faults("glibc")
    assert kept == "True" and many > 3 * few  # 28 MB faulted in under glibc's rule, 7 MB kept
    assert faults("keep", MALLOC_TRIM_THRESHOLD_="1000000")[0] == "False"  # the user's own setting wins
