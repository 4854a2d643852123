"""The one Host rule every HTTP parser's requests meet (RFC 9112 §3.2), and the name the allow list checks.

A request is refused with 400 when it is HTTP/1.1 and has no Host line, has more than one, or has a
value that is not `uri-host [":" port]` (RFC 3986: an IP literal in brackets, an IPv4 address or a
reg-name). h11 refuses the first two itself and httptools none of them; this rule runs in the ASGI
guard, after either parser, so the answer does not depend on `--http`. The name it returns is what the
DNS-rebinding guard compares with the allow list: read from the single, valid line only, so a second
line or a suffix after a bracketed address cannot pass for a loopback name.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

# RFC 3986 reg-name: unreserved, pct-encoded and sub-delims characters (an IPv4 address is one too).
_REG_NAME = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=%]*")
_PORT = re.compile(r"(:[0-9]*)?")


class BadHostError(ValueError):
    """A request whose Host lines break RFC 9112 §3.2; the message says how."""


def host_name(headers: Iterable[tuple[bytes, bytes]], http_version: str) -> str:
    """The Host header's name, lower case, without its port ("[::1]:8000" -> "::1"); "" for HTTP/1.0 without one.

    Raises BadHostError for a missing (HTTP/1.1), repeated or malformed Host line.
    """
    values = [value for name, value in headers if name.lower() == b"host"]
    if len(values) > 1:
        raise BadHostError(f"{len(values)} Host header lines; a request has exactly one")
    if not values:
        if http_version == "1.0":
            return ""
        raise BadHostError("no Host header; an HTTP/1.1 request must send one")
    return parse_host(values[0].decode("latin-1").strip())


def parse_host(value: str) -> str:
    """The name part of one Host value, lower case; BadHostError when the value is not `uri-host [":" port]`."""
    if value.startswith("["):
        end = value.find("]")
        name, rest = (value[1:end], value[end + 1 :]) if end > 0 else ("", value)
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            raise BadHostError(f"Host {value!r} is not a bracketed IPv6 address with an optional port") from None
    else:
        colon = value.find(":")
        name, rest = (value, "") if colon < 0 else (value[:colon], value[colon:])
        if not _REG_NAME.fullmatch(name):
            raise BadHostError(f"Host {value!r} is not a host name with an optional port")
    if not _PORT.fullmatch(rest):
        raise BadHostError(f"Host {value!r}: only a port may follow the name")
    return name.lower()
