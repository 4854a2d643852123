"""Images in embedding requests: which inputs are images, reading them under the server's limits, their vectors.

The shapes clients send today: Infinity's `"modality": "image"` (data URLs or URLs in `input`), Jina's
`input: [{"text": ...}, {"image": ...}]`, a bare `data:image/...` URL among OpenAI's texts (the OpenAI
client sends the others through `extra_body`), and Cohere v2's `images`. An image is decoded from its
data URL (or fetched from an http(s) URL only when the operator allowed it: a server that fetches what
a client names can be turned against the network it sits in), checked against the byte, pixel and count
limits (413 beyond; 400 for a corrupt image), and embedded apart from the texts of the same request,
through the model's own encode (the engine's image path: encoding/images.py).
"""

from __future__ import annotations

import base64
import binascii
import urllib.request
from typing import Any

import numpy as np
from fastapi.concurrency import run_in_threadpool

from sbert.formats.image_inputs import decode_image
from sbert.serve.scheduler import on_model_thread
from sbert.serve.state import ApiError, ServerState

DATA_URL = "data:image/"


def is_data_url(value: object) -> bool:
    """Whether an input string is an image data URL (`data:image/png;base64,...`)."""
    return isinstance(value, str) and value.startswith(DATA_URL)


def request_items(values: list[Any], modality: str | None) -> list[tuple[str, Any]] | None:
    """(kind, value) per input when any input is an image; None for an all-text request (the text path).

    `modality="image"` (Infinity) makes every input an image; a dict names its own kind (Jina); a string is
    an image when it is a data URL.
    """
    if modality not in (None, "text", "image"):
        raise ApiError(422, f"modality {modality!r}: this server embeds text and image", "invalid_modality")
    items: list[tuple[str, Any]] = []
    for i, value in enumerate(values):
        if isinstance(value, dict):
            kinds = [k for k in ("text", "image") if k in value]
            if len(kinds) != 1 or len(value) != 1:
                raise ApiError(422, f"input[{i}]: one of {{'text': ...}} or {{'image': ...}}", "invalid_input")
            items.append((kinds[0], value[kinds[0]]))
        elif modality == "image" or is_data_url(value):
            items.append(("image", value))
        else:
            items.append(("text", value))
    return items if any(kind == "image" for kind, _ in items) else None


def read_image(value: object, where: str, st: ServerState) -> Any:
    """A loaded RGB image from a data URL (or an allowed http(s) URL), within the byte and pixel limits.

    Decoded by the library's own reader (formats/image_inputs.py: EXIF rotation, alpha dropped), so a
    served vector is the library's. The pixel limit holds for the image and for what the model's processor
    resizes it to, both known from the header before anything is decoded: the resized copy is float32 (4
    bytes a channel against the decoded image's 1), so it may have a quarter of the pixels. Without that,
    an 87-byte 1000x1 PNG became a 224 x 224,000 float image (+488 MB) under a 224-pixel shortest edge.
    """
    from PIL import Image

    if not isinstance(value, str):
        raise ApiError(422, f"{where}: an image is a data URL or an http(s) URL string", "invalid_image")
    raw = _image_bytes(value, where, st)
    limit = st.settings.max_image_bytes
    if len(raw) > limit:
        raise ApiError(413, f"{where}: {len(raw)} image bytes; the limit is {limit}", "image_too_large")
    try:
        return decode_image(raw, lambda width, height: _check_pixels(width, height, where, st))
    except ApiError:
        raise
    except (OSError, ValueError, Image.DecompressionBombError, SyntaxError) as e:
        raise ApiError(400, f"{where}: not a readable image ({type(e).__name__})", "invalid_image") from None


def _check_pixels(width: int, height: int, where: str, st: ServerState) -> None:
    """413 when the image, or the model processor's resize of it (counted 4x: float32), is over the pixel limit."""
    limit = st.settings.max_image_pixels
    if width * height > limit:
        raise ApiError(413, f"{where}: {width}x{height} pixels; the limit is {limit}", "image_too_large")
    pixels_of = getattr(getattr(st.dense, "input_module", None), "image_pixels", None)
    resized = pixels_of(width, height) if pixels_of is not None else width * height
    if 4 * resized > limit:
        raise ApiError(413, f"{where}: {width}x{height} pixels become {resized} float pixels in the model's "
                       f"processor; the limit is {limit // 4} (--max-image-pixels / 4)", "image_too_large")  # fmt: skip


def _image_bytes(value: str, where: str, st: ServerState) -> bytes:
    if value.startswith(DATA_URL):
        header, _, payload = value.partition(",")
        if ";base64" not in header:
            raise ApiError(400, f"{where}: image data URLs must be base64", "invalid_image")
        try:
            return base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise ApiError(400, f"{where}: the data URL is not valid base64", "invalid_image") from None
    if value.startswith(("http://", "https://")):
        if not st.settings.allow_image_urls:
            raise ApiError(400, f"{where}: this server does not fetch image URLs (send a data URL; the operator "
                           "can allow URLs with --allow-image-urls)", "image_urls_off")  # fmt: skip
        return _fetch(value, where, st.settings.max_image_bytes)
    raise ApiError(422, f"{where}: an image is a data URL or an http(s) URL", "invalid_image")


def _fetch(url: str, where: str, limit: int) -> bytes:
    """The URL's bytes, at most `limit` + 1 read (a larger answer is refused by the caller)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return bytes(answer.read(limit + 1))
    except OSError as e:
        raise ApiError(400, f"{where}: cannot fetch the image ({type(e).__name__})", "invalid_image") from None


async def embed_items(st: ServerState, items: list[tuple[str, Any]], embed_texts: Any, field: str) -> np.ndarray:
    """float32 rows in input order: the texts through `embed_texts` (the dense batcher), the images apart."""
    images = [(i, v) for i, (kind, v) in enumerate(items) if kind == "image"]
    if len(images) > st.settings.max_images:
        raise ApiError(413, f"{len(images)} images; the limit is {st.settings.max_images}", "too_many_images")
    if "image" not in getattr(st.dense, "modalities", ("text",)):  # a static model embeds text only
        raise ApiError(422, f"{field}: the served model embeds text only", "unsupported_modality")
    # Decoding is CPU work: off the event loop, as the encode is, so other requests keep being served.
    pictures = await run_in_threadpool(lambda: [read_image(v, f"{field}[{i}]", st) for i, v in images])
    precision = st.settings.precision
    image_rows = await on_model_thread(lambda: np.asarray(st.dense.encode(pictures, precision=precision),
                                                          dtype=np.float32))  # fmt: skip
    texts = [(i, v) for i, (kind, v) in enumerate(items) if kind == "text"]
    rows = np.empty((len(items), image_rows.shape[1]), dtype=np.float32)
    rows[[i for i, _ in images]] = image_rows
    if texts:
        rows[[i for i, _ in texts]] = await embed_texts([str(v) for _, v in texts])
    return rows
