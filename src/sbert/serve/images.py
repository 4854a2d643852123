"""Images, sounds and image+text pairs in requests: which inputs are which, read under limits, their vectors.

The shapes clients send today: Infinity's `"modality": "image"` or `"audio"` (data URLs or URLs in `input`),
Jina's `input: [{"text": ...}, {"image": ...}, {"text": ..., "image": ...}]` (and `{"audio": ...}`), a bare
`data:image/...` or `data:audio/...` URL among OpenAI's texts (the OpenAI client sends the others through
`extra_body`), and Cohere v2's `images`. An image is decoded from its data URL (or fetched from an http(s) URL
only when the operator allowed it: a server that fetches what a client names can be turned against the
network it sits in), checked against the byte, pixel and count limits (413 beyond; 400 for a corrupt image);
a sound is decoded as serve/audio.py says. Each kind is embedded apart from the texts of the same request,
through the model's own encode (the engine's path for that kind: encoding/images.py).
"""

from __future__ import annotations

import urllib.request
from functools import partial
from typing import Any

import numpy as np
from fastapi.concurrency import run_in_threadpool

from sbert.formats.image_inputs import decode_image
from sbert.serve.audio import is_audio_url, read_audio
from sbert.serve.media_limits import check_bytes, check_count, data_url_bytes
from sbert.serve.scheduler import on_model_thread
from sbert.serve.state import ApiError, ServerState

DATA_URL = "data:image/"


def is_data_url(value: object) -> bool:
    """Whether an input string is an image data URL (`data:image/png;base64,...`)."""
    return isinstance(value, str) and value.startswith(DATA_URL)


def request_items(values: list[Any], modality: str | None) -> list[tuple[str, Any]] | None:
    """(kind, value) per input when any input is not text; None for an all-text request (the text path).

    `modality="image"` or `"audio"` (Infinity) makes every input that kind; a dict names its own kind (Jina;
    `{"text", "image"}` is an image+text pair); a string is an image or a sound when it is such a data URL.
    """
    if modality not in (None, "text", "image", "audio"):
        raise ApiError(422, f"modality {modality!r}: this server embeds text, image and audio", "invalid_modality")
    items: list[tuple[str, Any]] = []
    for i, value in enumerate(values):
        if isinstance(value, dict):
            items.append(_dict_item(value, f"input[{i}]"))
        elif modality in ("image", "audio"):
            items.append((modality, value))
        elif is_data_url(value) or is_audio_url(value):
            items.append(("image" if is_data_url(value) else "audio", value))
        else:
            items.append(("text", value))
    return items if any(kind != "text" for kind, _ in items) else None


def _dict_item(value: dict[str, Any], where: str) -> tuple[str, Any]:
    """One Jina-style input: {"text"}, {"image"}, {"audio"}, or {"text", "image"} (an image+text pair)."""
    keys = sorted(value)
    if keys == ["image", "text"]:
        return "image+text", dict(value)  # its key order is the order a chat model reads text and image in
    if len(keys) == 1 and keys[0] in ("text", "image", "audio"):
        return keys[0], value[keys[0]]
    raise ApiError(422, f"{where}: one of {{'text'}}, {{'image'}}, {{'audio'}} or {{'text', 'image'}}", "invalid_input")


def read_image(value: object, where: str, st: ServerState, module: Any = None) -> Any:
    """A loaded RGB image from a data URL (or an allowed http(s) URL), within the byte and pixel limits.

    Decoded by the library's own reader (formats/image_inputs.py: EXIF rotation, alpha dropped), so a
    served vector is the library's. The pixel limit holds for the image and for what the model's processor
    resizes it to, both known from the header before anything is decoded: the resized copy is float32 (4
    bytes a channel against the decoded image's 1), so it may have a quarter of the pixels. Without that,
    an 87-byte 1000x1 PNG became a 224 x 224,000 float image (+488 MB) under a 224-pixel shortest edge.
    `module`: the model part whose processor reads the image (default: the served embedding model's).
    """
    from PIL import Image

    if not isinstance(value, str):
        raise ApiError(422, f"{where}: an image is a data URL or an http(s) URL string", "invalid_image")
    raw = check_bytes(_image_bytes(value, where, st), where, "image", st)
    try:
        return decode_image(raw, lambda width, height: _check_pixels(width, height, where, st, module))
    except ApiError:
        raise
    except (OSError, ValueError, Image.DecompressionBombError, SyntaxError) as e:
        raise ApiError(400, f"{where}: not a readable image ({type(e).__name__})", "invalid_image") from None


def _check_pixels(width: int, height: int, where: str, st: ServerState, module: Any = None) -> None:
    """413 when the image, or the model processor's resize of it (counted 4x: float32), is over the pixel limit."""
    limit = st.settings.max_image_pixels
    if width * height > limit:
        raise ApiError(413, f"{where}: {width}x{height} pixels; the limit is {limit}", "image_too_large")
    held = st.model if st.model is not None else st.multivector  # a dense model, or a page-image model (ColPali)
    first = module or getattr(held, "input_module", None) or getattr(held, "transformer", None)
    pixels_of = getattr(first, "image_pixels", None)
    resized = pixels_of(width, height) if pixels_of is not None else width * height
    if 4 * resized > limit:
        raise ApiError(413, f"{where}: {width}x{height} pixels become {resized} float pixels in the model's "
                       f"processor; the limit is {limit // 4} (--max-image-pixels / 4)", "image_too_large")  # fmt: skip


def _image_bytes(value: str, where: str, st: ServerState) -> bytes:
    if value.startswith(DATA_URL):
        return data_url_bytes(value, where, "image")
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
    """float32 rows in input order: the texts through `embed_texts` (the dense batcher), each other kind apart."""
    media = [(i, kind) for i, (kind, _) in enumerate(items) if kind != "text"]
    check_count(len(media), st)
    embeds = getattr(st.dense, "modalities", ("text",))
    for i, kind in media:
        if kind not in embeds:
            raise ApiError(422, f"{field}[{i}]: a {kind} input; the served model embeds {', '.join(embeds)}",
                           "unsupported_modality")  # fmt: skip
    # Decoding is CPU work: off the event loop, as the encode is, so other requests keep being served.
    read = await run_in_threadpool(lambda: {i: read_item(kind, items[i][1], f"{field}[{i}]", st) for i, kind in media})
    rows = np.empty((len(items), st.dense_width), dtype=np.float32)
    precision = st.settings.precision
    for kind in dict.fromkeys(kind for _, kind in media):  # one encode per kind: a batch holds one kind
        at = [i for i, k in media if k == kind]
        rows[at] = await on_model_thread(partial(_encode, st, [read[i] for i in at], precision))
    texts = [(i, v) for i, (kind, v) in enumerate(items) if kind == "text"]
    if texts:
        rows[[i for i, _ in texts]] = await embed_texts([str(v) for _, v in texts])
    return rows


def _encode(st: ServerState, values: list[Any], precision: str) -> np.ndarray:
    return np.asarray(st.dense.encode(values, precision=precision), dtype=np.float32)


def read_item(kind: str, value: Any, where: str, st: ServerState, module: Any = None) -> Any:
    """One non-text input as the model's encode takes it: an image, `{"array", "sampling_rate"}`, or a pair.

    `module`: the model part whose processor reads images (default: the served embedding model's).
    """
    if kind == "audio":
        return read_audio(value, where, st)
    if kind == "image+text":
        if not isinstance(value["text"], str):
            raise ApiError(422, f"{where}: the pair's text is a string", "invalid_input")
        return {k: read_image(v, where, st, module) if k == "image" else v for k, v in value.items()}
    return read_image(value, where, st, module)
