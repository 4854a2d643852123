"""`sbert serve` under hostile input: lone surrogates, vanished clients, foreign Host headers."""

import concurrent.futures
import re
import socket
import time

import httpx
import pytest

from sbert.serve.host_rule import BadHostError, host_name
from sbert.serve.settings import ServeSettings
from tests.serve_helpers import serve_in_thread, start_server

MODEL = "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def server():
    srv = serve_in_thread("--model", MODEL)  # no key: the default
    yield srv
    assert srv.stop()


def queued(client: httpx.Client, url: str) -> float:
    text = client.get(url + "/metrics").text
    return float(next(line.split()[1] for line in text.splitlines() if line.startswith("sbert_queue_texts ")))


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/embeddings", b'{"model": "all-MiniLM-L6-v2", "input": "a\\ud800"}'),
        ("/similarity", b'{"pairs": [["fine", "b\\udfff c"]]}'),
        ("/mine", b'{"sentences": ["one", "two", "x\\ud800"]}'),
    ],
)
def test_lone_surrogate_is_a_422_naming_the_item_and_the_connection_lives(server, path, body):
    with httpx.Client(timeout=30) as client:
        bad = client.post(server.url + path, content=body, headers={"Content-Type": "application/json"})
        assert bad.status_code == 422, bad.text
        assert "surrogate" in bad.json()["error"]["message"] and "[" in bad.json()["error"]["message"]
        good = client.post(server.url + "/v1/embeddings", json={"model": MODEL, "input": "still here"})
        assert good.status_code == 200


def test_empty_string_is_refused_as_openai_does(server):
    response = httpx.post(server.url + "/v1/embeddings", json={"model": MODEL, "input": ["ok", ""]}, timeout=30)
    assert response.status_code == 422 and "input[1] is an empty string" in response.json()["error"]["message"]


def test_work_of_clients_that_hung_up_leaves_the_queue(server):
    texts = [f"sentence number {i} about the weather and the markets today" for i in range(2048)]

    def impatient(_: int) -> str:
        try:
            httpx.post(server.url + "/v1/embeddings", json={"model": MODEL, "input": texts}, timeout=0.5)
        except httpx.TimeoutException:
            return "timed out"
        return "answered"

    with httpx.Client(timeout=60) as client:
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            outcomes = list(pool.map(impatient, range(3)))
        assert outcomes == ["timed out"] * 3
        # one group may already be running; every text still waiting must be gone within a second or two
        deadline = time.monotonic() + 3
        while queued(client, server.url) > 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert queued(client, server.url) == 0
        start = time.monotonic()
        assert client.post(server.url + "/v1/embeddings", json={"model": MODEL, "input": "hi"}).status_code == 200
        # at most the one group that was already running is waited for, not all three
        assert time.monotonic() - start < 10


def test_foreign_host_header_is_refused_on_loopback(server):
    port = server.url.rsplit(":", 1)[1]
    body = {"model": MODEL, "input": "x"}
    evil = httpx.post(server.url + "/v1/embeddings", json=body, headers={"Host": f"evil.example:{port}"}, timeout=30)
    assert evil.status_code == 400 and evil.json()["error"]["code"] == "host_not_allowed"
    assert "--allowed-host evil.example" in evil.json()["error"]["message"]
    ok = httpx.post(server.url + "/v1/embeddings", json=body, headers={"Host": f"localhost:{port}"}, timeout=30)
    assert ok.status_code == 200


def test_host_allow_list_rules():
    assert ServeSettings(model=MODEL).host_allow_list() == {"127.0.0.1", "localhost", "::1", ""}
    assert "api.example" in ServeSettings(model=MODEL, allowed_hosts=("API.example",)).host_allow_list()
    assert ServeSettings(model=MODEL, host="0.0.0.0").host_allow_list() is None  # no list given: any host
    assert host_name([(b"host", b"[::1]:8000")], "1.1") == "::1"
    assert host_name([(b"host", b"LocalHost:80")], "1.1") == "localhost"
    assert host_name([(b"host", b"")], "1.1") == ""  # RFC 9112 §3.2: empty when the target has no authority
    assert host_name([], "1.0") == ""


@pytest.mark.parametrize(
    "headers",
    [
        [(b"host", b"127.0.0.1"), (b"host", b"evil.example")],
        [],
        [(b"host", b"[::1]evil.example")],
        [(b"host", b"[::1]:80x")],
        [(b"host", b"localhost:80:80")],
        [(b"host", b"local host")],
        [(b"host", b"[evil.example]")],
    ],
)
def test_the_host_rule_refuses_what_rfc_9112_refuses(headers):
    with pytest.raises(BadHostError):
        host_name(headers, "1.1")


@pytest.fixture(scope="module")
def h11_server():
    srv = serve_in_thread("--model", MODEL, "--http", "h11")
    yield srv
    assert srv.stop()


BAD_HOSTS = [b"Host: 127.0.0.1\r\nHost: evil.example\r\n", b"", b"Host: [::1]evil.example\r\n"]


@pytest.mark.parametrize("parser", ["httptools", "h11"])
def test_a_second_missing_or_malformed_host_line_is_a_400_with_either_parser(parser, request):
    srv = request.getfixturevalue("server" if parser == "httptools" else "h11_server")
    port = int(srv.url.rsplit(":", 1)[1])
    for host_lines in BAD_HOSTS:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(b"GET /health HTTP/1.1\r\n" + host_lines + b"Connection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        assert re.findall(rb"HTTP/1\.1 (\d+)", data) == [b"400"], (parser, host_lines, data[:200])
    ok = httpx.get(srv.url + "/health", timeout=30)
    assert ok.status_code == 200


def test_urllib_sending_a_large_body_whole_still_reads_the_413(server):
    import urllib.error
    import urllib.request

    body = b'{"model": "all-MiniLM-L6-v2", "input": "' + b"a" * 2_100_000 + b'"}'
    statuses = []
    for _ in range(10):
        request = urllib.request.Request(server.url + "/v1/embeddings", data=body,
                                         headers={"Content-Type": "application/json"})  # fmt: skip
        try:
            urllib.request.urlopen(request, timeout=30)
        except urllib.error.HTTPError as e:
            statuses.append(e.code)
    assert statuses == [413] * 10  # no "Broken pipe" / "Connection reset by peer"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"model": MODEL, "input": []}, "input: List should have at least 1 item"),
        ({"model": MODEL, "input": ["ok", None]}, "input[1]: is null, expected a string"),
        ({"model": MODEL, "input": "x", "dimensions": "64"}, "dimensions"),
        ({"model": MODEL, "input": "x", "dimensions": 64.0}, "dimensions"),
        ({"model": MODEL, "input": "x", "dimensions": True}, "dimensions"),
    ],
)
def test_validation_errors_name_the_problem(server, body, expected):
    response = httpx.post(server.url + "/v1/embeddings", json=body, timeout=30)
    assert response.status_code == 422
    assert response.json()["error"]["message"].startswith(expected), response.json()


def test_unparsable_body_is_a_400_with_a_code(server):
    bad_utf8 = httpx.post(server.url + "/v1/embeddings", content=b'{"model": "\xff\xfe", "input": "x"}',
                          headers={"Content-Type": "application/json"}, timeout=30)  # fmt: skip
    assert bad_utf8.status_code == 400 and bad_utf8.json()["error"]["code"] == "invalid_json"
    deep = b'{"input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    nested = httpx.post(server.url + "/v1/embeddings", content=deep, headers={"Content-Type": "application/json"},
                        timeout=30)  # fmt: skip
    assert nested.status_code in (400, 422) and nested.json()["error"]["code"] is not None


POST_ROUTES = ("/v1/embeddings", "/v1/rerank", "/similarity", "/search", "/mine", "/embed_sparse", "/embed", "/",
               "/rerank", "/tokenize", "/v1/embed", "/v2/embed", "/v2/rerank")  # fmt: skip


@pytest.mark.parametrize("path", POST_ROUTES)
def test_malformed_json_is_a_400_with_a_readable_message_on_every_route(server, path):
    response = httpx.post(server.url + path, content=b'{"input": ["a" "b"]}',
                          headers={"Content-Type": "application/json"}, timeout=30)  # fmt: skip
    assert response.status_code == 400, response.text
    body = response.json()
    message = body.get("message") or body.get("error")
    message = message["message"] if isinstance(message, dict) else message
    assert message.startswith("body is not valid JSON: Expecting ',' delimiter at character 15"), message


def test_head_health_and_openapi_without_a_key(server):
    assert httpx.head(server.url + "/health", timeout=30).status_code == 200
    assert httpx.get(server.url + "/openapi.json", timeout=30).status_code == 200  # no key set: public


@pytest.fixture(scope="module")
def strict_server(tmp_path_factory):
    srv = start_server(tmp_path_factory.mktemp("strict"), "--model", MODEL, "--read-timeout", "2")
    yield srv
    assert srv.stop()


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_huge_headers_and_silent_sockets_cost_little_and_the_server_answers(strict_server):
    import socket

    import psutil

    host, port = "127.0.0.1", int(strict_server.url.rsplit(":", 1)[1])
    rss_before = psutil.Process(strict_server.process.pid).memory_info().rss
    sockets = []
    for _ in range(8):  # never-finished 50 MB headers
        s = socket.create_connection((host, port))
        s.settimeout(5)
        sent = 0
        try:
            s.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: localhost\r\nX-Big: ")
            while sent < 50_000_000:
                s.sendall(b"a" * 1_000_000)
                sent += 1_000_000
        except OSError:
            pass  # the server gave up on this head long before 50 MB
        assert sent < 50_000_000
        sockets.append(s)
    silent = socket.create_connection((host, port))
    silent.sendall(b"GET /health HTTP/1.1\r\n")  # a request line, then nothing
    silent.settimeout(10)
    start = time.monotonic()
    assert silent.recv(1024) == b""  # closed by the server after --read-timeout
    assert 1.5 < time.monotonic() - start < 8
    grown = psutil.Process(strict_server.process.pid).memory_info().rss - rss_before
    assert grown < 50_000_000, f"RSS grew {grown / 1e6:.0f} MB"
    ok = httpx.post(strict_server.url + "/v1/embeddings", json={"model": MODEL, "input": "alive"}, timeout=30)
    assert ok.status_code == 200
    for s in [*sockets, silent]:
        s.close()


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_a_slow_but_steady_client_is_not_cut(strict_server):
    import socket

    body = b'{"model": "all-MiniLM-L6-v2", "input": "slow"}'
    head = f"POST /v1/embeddings HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" \
           f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()  # fmt: skip
    with socket.create_connection(("127.0.0.1", int(strict_server.url.rsplit(":", 1)[1]))) as s:
        s.sendall(head)
        time.sleep(1.0)  # within the 2 s deadline
        s.sendall(body)
        s.settimeout(30)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200")


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_small_request_is_not_stuck_behind_a_large_one(server):
    big = ["漢字仮名交じり文" * 32] * 300  # 255 CJK characters each: ~256 tokens, ~77k tokens in all
    timings: dict[str, float] = {}

    def send(name: str, texts: list[str]) -> int:
        start = time.monotonic()
        status = httpx.post(server.url + "/v1/embeddings", json={"model": MODEL, "input": texts}, timeout=120)
        timings[name] = time.monotonic() - start
        timings[name + "_end"] = time.monotonic()
        return status.status_code

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        large = pool.submit(send, "large", big)
        time.sleep(1.5)  # the large request is running by now
        assert send("small", ["a short question?"]) == 200
        assert large.result() == 200
    # the small request ran in one of the next slices, not after all ~77k tokens
    assert timings["small_end"] < timings["large_end"]
    assert timings["small"] < timings["large"] / 3, timings


def test_request_token_cap_is_a_clear_413(server):
    texts = ["漢字仮名交じり文" * 32] * 600  # ~154k tokens > 131,072
    response = httpx.post(server.url + "/v1/embeddings", json={"model": MODEL, "input": texts}, timeout=60)
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_many_tokens"
    assert "--max-request-tokens" in response.json()["error"]["message"]


def test_truncated_inputs_are_named_and_can_be_refused(server):
    long = "word " * 400  # over all-MiniLM-L6-v2's 256 tokens
    body = {"model": MODEL, "input": ["short", long]}
    answer = httpx.post(server.url + "/v1/embeddings", json=body, timeout=60).json()
    assert answer["truncated"] == [1]
    assert "truncated" not in httpx.post(server.url + "/v1/embeddings", json={"model": MODEL, "input": "x"}).json()
    refused = httpx.post(server.url + "/v1/embeddings", json={**body, "truncate": False}, timeout=60)
    assert refused.status_code == 413 and refused.json()["error"]["code"] == "input_too_long"
    assert refused.json()["error"]["message"].startswith("input[1]")


def test_rerank_without_a_reranker_is_a_404_naming_the_flag(server):
    answer = httpx.post(server.url + "/v1/rerank", json={"query": "q", "documents": ["d"]}, timeout=30)
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "no_reranker"
    assert "--reranker" in answer.json()["error"]["message"]


def test_int8_embeddings_without_calibration_use_the_packaged_ranges(server):
    body = {"model": MODEL, "input": "x", "encoding_format": "int8"}
    answer = httpx.post(server.url + "/v1/embeddings", json=body, timeout=30)
    assert answer.status_code == 200 and len(answer.json()["data"][0]["embedding"]) == 384
    body["encoding_format"] = "ubinary"
    assert len(httpx.post(server.url + "/v1/embeddings", json=body, timeout=30).json()["data"][0]["embedding"]) == 48


def test_tei_tokenize_gives_the_tokens_the_model_sees(server):
    # all-MiniLM-L6-v2's tokenizer.json saves padding to 128 and truncation at 128; the model's limit is 256
    def tokens(body):
        answer = httpx.post(server.url + "/tokenize", json=body, timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()[0]

    assert [t["text"] for t in tokens({"inputs": "hello world"})] == ["[CLS]", "hello", "world", "[SEP]"]
    assert len(tokens({"inputs": "word " * 300})) == 256
    assert [t["text"] for t in tokens({"inputs": "hello world", "add_special_tokens": False})] == ["hello", "world"]
