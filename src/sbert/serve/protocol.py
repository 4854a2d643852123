"""The HTTP/1.1 protocols the server runs: uvicorn's, with bounded request heads and a read deadline.

uvicorn's httptools protocol buffers a header of any size (eight sockets sending a never-finished
50 MB header added ~366 MB of RSS), and neither of its protocols times out a client that sends a
request line and then nothing. Here the head of a request (request line and headers) is cut at
`--max-header-bytes` with a 400, and every request must arrive whole, head and body, within
`--read-timeout` seconds of its first byte, or of the connection opening; the answer may take as
long as it takes.

Two parsers carry these guards (`--http`): httptools (C, the default: under one-text requests h11's
Python parsing was the event loop's largest share, docs/serving.md) and h11 (pure Python).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from sbert.serve.settings import HTTP_PARSERS

log = logging.getLogger(__name__)


class _Deadline:
    """One connection's read deadline: armed while a request arrives, closing the transport when it passes."""

    def __init__(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        self.loop, self.seconds = loop, seconds
        self.handle: asyncio.TimerHandle | None = None

    def arm(self, transport: asyncio.BaseTransport) -> None:
        self.disarm()
        self.handle = self.loop.call_later(self.seconds, self._expired, transport)

    def disarm(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None

    @property
    def armed(self) -> bool:
        return self.handle is not None

    def _expired(self, transport: asyncio.BaseTransport) -> None:
        self.handle = None
        if not transport.is_closing():
            log.info("closing a connection whose request took over %.0f s to arrive", self.seconds)
            transport.close()


def guarded_protocol(
    read_timeout: float, max_header_bytes: int, parser: str = HTTP_PARSERS[0]
) -> type[asyncio.Protocol]:
    """The protocol class for `parser`: heads over `max_header_bytes` refused, requests cut after `read_timeout` s.

    h11 caps a head still incomplete through uvicorn's h11_max_incomplete_event_size, which uvicorn_options
    passes; a whole one is measured here once parsed, as httptools' is.
    """
    if parser == "h11":
        return _guarded_h11(read_timeout, max_header_bytes)
    if parser == "httptools":
        return _guarded_httptools(read_timeout, max_header_bytes)
    raise ValueError(f"--http must be one of {', '.join(HTTP_PARSERS)}, got {parser!r}")


def _guarded_h11(read_timeout: float, max_header_bytes: int) -> type[asyncio.Protocol]:
    class GuardedH11Protocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._deadline = _Deadline(self.loop, read_timeout)
            self._deadline.arm(transport)
            self.conn.next_event = _checked_events(self.conn.next_event, max_header_bytes)  # type: ignore[method-assign]

        def data_received(self, data: bytes) -> None:
            if not self._deadline.armed and self.conn.their_state is not h11.DONE:
                self._deadline.arm(self.transport)  # the first bytes of the next request on a kept-alive connection
            super().data_received(data)
            if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED):
                self._deadline.disarm()  # the whole request is in; the answer has no deadline

        def connection_lost(self, exc: Exception | None) -> None:
            self._deadline.disarm()
            super().connection_lost(exc)

    return GuardedH11Protocol


def _checked_events(next_event: Callable[[], Any], max_header_bytes: int) -> Callable[[], Any]:
    """h11's next_event, refusing a request head over the cap or framed twice (both as httptools refuses them).

    h11 bounds only the bytes it holds while a head is incomplete: a whole oversized head that came in
    one read would reach the app. A request with both Content-Length and Transfer-Encoding is request
    smuggling's precondition (RFC 9112 §6.1: answer, then close); h11 would frame it by Transfer-Encoding
    and keep the connection open. The protocol error is uvicorn's cue to answer 400 and close.
    """

    def checked() -> Any:
        event = next_event()
        if isinstance(event, h11.Request):
            size = len(event.target) + sum(len(name) + len(value) for name, value in event.headers)
            if size > max_header_bytes:
                log.info("refusing a request whose head is over %d bytes", max_header_bytes)
                raise h11.RemoteProtocolError(f"request head over {max_header_bytes} bytes", error_status_hint=400)
            names = {name for name, _ in event.headers}  # h11 gives them lower case
            if b"content-length" in names and b"transfer-encoding" in names:
                log.info("refusing a request with both Content-Length and Transfer-Encoding")
                raise h11.RemoteProtocolError("Content-Length beside Transfer-Encoding", error_status_hint=400)
        return event

    return checked


class _HeadCap:
    """A request head's size against the cap, counted two ways.

    The bytes read while the head is incomplete (a never-finished header is refused after at most one more
    read: uvloop reads up to 256 KiB at a time), and its parsed request target, names and values (a whole
    oversized head that came in one read is refused before the app sees it).
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.in_head, self.read, self.parsed = True, 0, 0

    def count_read(self, size: int) -> None:
        if self.in_head:
            self.read += size

    @property
    def read_over(self) -> bool:
        return self.in_head and self.read > self.cap

    def count_parsed(self, size: int) -> None:
        """Add `size` parsed bytes; over the cap, raise inside the parser's callback (uvicorn then answers 400)."""
        self.parsed += size
        if self.parsed > self.cap:
            raise ValueError(f"request head over {self.cap} bytes")

    def head_done(self) -> None:
        self.in_head = False

    def message_done(self) -> None:
        self.in_head, self.read, self.parsed = True, 0, 0


def _guarded_httptools(read_timeout: float, max_header_bytes: int) -> type[asyncio.Protocol]:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._deadline = _Deadline(self.loop, read_timeout)
            self._deadline.arm(transport)
            self._head = _HeadCap(max_header_bytes)

        def data_received(self, data: bytes) -> None:
            self._head.count_read(len(data))
            super().data_received(data)
            if self._head.read_over and not self.transport.is_closing():
                log.info("refusing a request whose head is over %d bytes", max_header_bytes)
                self.send_400_response("Request head over the server's size limit.")

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if not self._deadline.armed:
                self._deadline.arm(self.transport)  # the first byte of the next request on a kept-alive connection

        def on_url(self, url: bytes) -> None:
            self._head.count_parsed(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._head.count_parsed(len(name) + len(value))
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self._head.head_done()
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._deadline.disarm()  # the whole request is in; the answer has no deadline
            self._head.message_done()
            super().on_message_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._deadline.disarm()
            super().connection_lost(exc)

    return GuardedHttpToolsProtocol
