"""The images and sounds a request carries: their count, and their bytes from a base64 data URL, within limits.

One reading for every kind and route (serve/images.py, serve/audio.py, serve/page_service.py): more than
`--max-images` is a 413; a data URL that is not base64 or not valid base64 is a 400, one over
`--max-image-bytes` a 413; each error names the input and its kind.
"""

from __future__ import annotations

import base64
import binascii

from sbert.serve.state import ApiError, ServerState


def check_count(count: int, st: ServerState) -> None:
    """A 413 when a request carries more images and sounds than `--max-images`."""
    if count > st.settings.max_images:
        raise ApiError(413, f"{count} images or sounds; the limit is {st.settings.max_images}", "too_many_images")


def data_url_bytes(value: str, where: str, kind: str) -> bytes:
    """The decoded payload of a base64 data URL (`data:<kind>/...;base64,...`); 400 otherwise."""
    header, _, payload = value.partition(",")
    if ";base64" not in header:
        raise ApiError(400, f"{where}: {kind} data URLs must be base64", f"invalid_{kind}")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(400, f"{where}: the data URL is not valid base64", f"invalid_{kind}") from None


def check_bytes(raw: bytes, where: str, kind: str, st: ServerState) -> bytes:
    """`raw`, or a 413 when it is over the server's byte limit for one image or sound."""
    limit = st.settings.max_image_bytes
    if len(raw) > limit:
        raise ApiError(413, f"{where}: {len(raw)} {kind} bytes; the limit is {limit}", f"{kind}_too_large")
    return raw
