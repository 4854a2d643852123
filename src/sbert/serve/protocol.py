"""The HTTP/1.1 protocol the server runs: uvicorn's h11 one, with bounded headers and a read deadline.

uvicorn's default httptools parser buffers a header of any size (eight sockets sending a
never-finished 50 MB header added ~366 MB of RSS), and neither parser times out a client that
sends a request line and then nothing. Here h11 caps the unparsed bytes of a request head
(`--max-header-bytes`), and every request must arrive whole, head and body, within
`--read-timeout` seconds of its first byte, or of the connection opening; the answer may take as
long as it takes.
"""

from __future__ import annotations

import asyncio
import logging

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)


def guarded_protocol(read_timeout: float) -> type[H11Protocol]:
    """An h11 protocol class closing connections whose request is not fully read in `read_timeout` s."""

    class GuardedH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._deadline is None and self.conn.their_state is not h11.DONE:
                self._arm()  # the first bytes of the next request on a kept-alive connection
            super().data_received(data)
            if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED):
                self._disarm()  # the whole request is in; the answer has no deadline

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(read_timeout, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if self.conn.their_state is not h11.DONE and not self.transport.is_closing():
                log.info("closing a connection whose request took over %.0f s to arrive", read_timeout)
                self.transport.close()

    return GuardedH11Protocol
