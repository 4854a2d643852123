"""Both HTTP parsers the server runs (serve/protocol.py) under uvicorn on loopback: heads over the cap get
a 400, requests that do not arrive in time are cut, slow-but-steady and kept-alive clients are not."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator

import pytest

from sbert.serve.settings import ServeSettings
from tests.serve_helpers import ThreadServer, free_port, run_app_in_thread

CAP, DEADLINE = 4096, 1.5  # s: a slow client below sends within a fifth of it, leaving room on a loaded machine


async def echo(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
    """A bare ASGI app: 200 with the request's body (the protocol is under test, not the app)."""
    if scope["type"] != "http":
        return
    body, more = b"", True
    while more:
        message = await receive()
        body, more = body + message.get("body", b""), message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module", params=["httptools", "h11"])
def server(request: pytest.FixtureRequest) -> Iterator[ThreadServer]:
    settings = ServeSettings(model="none", port=free_port(), max_header_bytes=CAP, read_timeout=DEADLINE,
                             http=request.param)  # fmt: skip
    srv = run_app_in_thread(echo, settings, timeout=30)
    yield srv
    assert srv.stop()


def connect(server: ThreadServer) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1])))
    s.settimeout(10)
    return s


def post(body: bytes, extra: bytes = b"") -> bytes:
    return b"POST /x HTTP/1.1\r\nHost: localhost\r\n" + extra + b"Content-Length: %d\r\n\r\n" % len(body) + body


def answers(s: socket.socket, count: int) -> list[bytes]:
    """The status codes of the next `count` answers on a keep-alive connection (the echoed bodies are short
    and hold no status line)."""
    data = b""
    while data.count(b"HTTP/1.1 ") < count:
        chunk = s.recv(65536)
        assert chunk, f"closed after {data!r}"
        data += chunk
    return re.findall(rb"HTTP/1\.1 (\d+)", data)


def read_all(s: socket.socket) -> bytes:
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    return data


def test_a_never_finished_header_is_cut_at_the_cap(server):
    with connect(server) as s:
        # one write, no end to the header: without the cap the answer would be the read deadline's close (b"")
        s.sendall(b"POST /x HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * (2 * CAP))
        assert read_all(s).startswith(b"HTTP/1.1 400")


def test_a_whole_head_over_the_cap_in_one_write_is_a_400(server):
    with connect(server) as s:
        s.sendall(post(b"{}", b"X-Big: " + b"a" * (2 * CAP) + b"\r\n"))
        assert read_all(s).startswith(b"HTTP/1.1 400")


def test_a_head_under_the_cap_and_a_body_over_it_pass(server):
    with connect(server) as s:
        s.sendall(post(b"b" * (4 * CAP), b"X-Fine: " + b"a" * (CAP // 2) + b"\r\n"))
        assert answers(s, 1) == [b"200"]


def test_a_silent_client_is_closed_after_the_deadline(server):
    with connect(server) as s:
        s.sendall(b"GET /health HTTP/1.1\r\n")  # a request line, then nothing
        start = time.monotonic()
        assert read_all(s) == b""
        assert 0.8 * DEADLINE < time.monotonic() - start < 5 * DEADLINE


def test_slow_but_steady_and_kept_alive_clients_are_not_cut(server):
    with connect(server) as s:
        head, body = post(b"slow").split(b"\r\n\r\n")
        s.sendall(head + b"\r\n\r\n")
        time.sleep(0.2 * DEADLINE)
        s.sendall(body)
        assert answers(s, 1) == [b"200"]
        time.sleep(1.5 * DEADLINE)  # idle between requests: no read deadline runs
        s.sendall(post(b"one") + post(b"two"))  # pipelined
        assert answers(s, 2) == [b"200", b"200"]
        s.sendall(b"POST /x HTTP/1.1\r\n")  # the next request starts its own deadline
        start = time.monotonic()
        assert read_all(s) == b""
        assert 0.8 * DEADLINE < time.monotonic() - start < 5 * DEADLINE


def test_an_unknown_parser_and_a_negative_single_thread_limit_are_named():
    from sbert.serve.protocol import guarded_protocol

    with pytest.raises(ValueError, match="--http must be one of httptools, h11"):
        guarded_protocol(1.0, CAP, "picohttp")
    with pytest.raises(ValueError, match="--http must be one of httptools, h11"):
        ServeSettings(model="none", http="picohttp").validate()
    with pytest.raises(ValueError, match="--single-thread-tokens must be >= 0, got -1"):
        ServeSettings(model="none", single_thread_tokens=-1).validate()


def test_content_length_beside_transfer_encoding_is_answered_and_the_connection_closed(server):
    # RFC 9112 §6.1: a request with both framings is request smuggling's precondition; the server answers and
    # closes, so the pipelined GET behind it is never read under another framing. Both parsers answer alike.
    smuggled = (b"POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"0\r\n\r\nGET /x HTTP/1.1\r\nHost: localhost\r\n\r\n")  # fmt: skip
    with connect(server) as s:
        s.sendall(smuggled)
        data = read_all(s)  # returns only once the server has closed the connection
    assert re.findall(rb"HTTP/1\.1 (\d+)", data) == [b"400"], data
