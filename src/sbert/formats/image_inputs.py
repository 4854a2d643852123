"""Inputs as sentence-transformers 6.3 reads them: which kind each is, and opening images.

An input is an image when it is a PIL image, a `data:image/...` URI, an existing file (or an http(s) URL)
with an image suffix, a PDF page reference (`file.pdf#page=N`), an HWC array or tensor, or `{"image": x}`;
a sound is a 1-D array or `{"array", "sampling_rate"}`; `{"text", "image"}` is a pair; a list of
`{"role", "content"}` dicts is a chat. A batch holds one kind of input (6.3's rule).

One reader opens every encoded image, for the library and every server route alike (`decode_image`:
transformers' `load_image` steps, EXIF rotation then RGB with any alpha dropped), and says before decoding
how many pixels the model's processor will make of it (`resized_pixels`), which the server's limits count.
"""

from __future__ import annotations

import base64
import io
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sbert.formats.pdf_pages import page_documents, page_reference, render_page

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".tiff", ".webp")


def is_image_string(text: str) -> bool:
    """A data URI, an http(s) URL ending in an image suffix, an existing image file, or a PDF page reference."""
    if text.startswith("data:image/"):
        return True
    if "#page=" in text and page_reference(text) is not None:  # `file.pdf#page=N` (formats/pdf_pages.py)
        return True
    lowered = text.lower()
    if lowered.startswith(("http://", "https://")) and " " not in text:
        return lowered.split("?", 1)[0].endswith(IMAGE_SUFFIXES)
    return lowered.endswith(IMAGE_SUFFIXES) and os.path.isfile(text)


def folder_documents(folder: str | os.PathLike[str]) -> list[str]:
    """A folder corpus: its image files, and every page of its PDFs as `file.pdf#page=N`, in path order."""
    return page_documents(folder, IMAGE_SUFFIXES)


def image_files(folder: str | os.PathLike[str]) -> list[str]:
    """Every image file under `folder` (suffix by IMAGE_SUFFIXES), as absolute paths in sorted order."""
    root = Path(folder).resolve()
    return sorted(str(p) for p in root.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)


def input_kind(item: Any) -> str:
    """The kind of one input: image or text (other kinds: their name, which the caller refuses)."""
    if isinstance(item, list | tuple) and item and all(isinstance(m, dict) and "role" in m for m in item):
        return "message"  # a chat: [{"role": ..., "content": ...}, ...]
    if isinstance(item, dict):
        if "array" in item:  # a sound as 6.3 takes it: {"array": ..., "sampling_rate": ...}
            return "audio"
        keys = sorted(item)
        return keys[0] if len(keys) == 1 else "+".join(keys)
    if type(item).__module__.startswith("PIL."):
        return "image"
    if isinstance(item, str):
        return "image" if is_image_string(item) else "text"
    shape = getattr(item, "shape", None)
    if shape is not None:
        return "image" if len(shape) == 3 else "audio" if len(shape) in (1, 2) else "video"
    return type(item).__name__


def split_kinds(
    inputs: Any, modalities: Sequence[str], text_as_kind: bool = False
) -> tuple[str, list[Any], bool] | None:
    """(kind, items, single) when `inputs` are one non-text kind the model embeds; None for text (or a kind it lacks).

    `text_as_kind`: texts too (a chat model renders every input through its template). A single input is a
    string, a dict, a chat, an image (HWC array) or a sound (1-D array); items come as the encode engine reads
    them: `{"image": x}` as x, the rest as given (`{"array", "sampling_rate"}` keeps its rate, an image+text
    pair its key order). A batch mixing kinds gets 6.3's error.
    """
    single = input_kind(inputs) == "message" or (
        not isinstance(inputs, list | tuple)
        and (not isinstance(inputs, Iterable) or isinstance(inputs, str | dict) or getattr(inputs, "ndim", 0) in (1, 3))
    )
    items = [inputs] if single else list(inputs)
    kinds = {input_kind(item) for item in items}
    if kinds <= {"text"} and not (text_as_kind and items):
        return None
    if len(kinds) > 1:  # sentence-transformers' words
        raise ValueError(f"This batch mixes multiple modalities ({', '.join(sorted(kinds))}), which this "
                         "SentenceTransformer model cannot encode in a single batch. Encode each modality separately "
                         "(one call per modality).")  # fmt: skip
    kind = kinds.pop()
    if kind not in modalities:
        return None  # the caller's text check answers with the reference's error for an unsupported kind
    if kind == "audio":
        sampling_rate(items)  # one rate for the whole call, as 6.3 checks it (before batches split it)
    return kind, [_unwrapped(kind, item) for item in items], single


def sampling_rate(items: Sequence[Any]) -> int | None:
    """The one sampling rate `{"array", "sampling_rate"}` items name (None when none does); two rates: 6.3's error."""
    rates = {int(item["sampling_rate"]) for item in items if isinstance(item, dict) and "sampling_rate" in item}
    if len(rates) > 1:  # the feature extractor takes one rate per batch
        named = ", ".join(map(str, sorted(rates)))
        raise ValueError(f"This batch mixes audio with different sampling rates ({named}); resample the audio to a "
                         "common rate, or encode each sampling rate in a separate call.")  # fmt: skip
    return rates.pop() if rates else None


def _unwrapped(kind: str, item: Any) -> Any:
    if kind == "image" and isinstance(item, dict):
        return item["image"]
    return item


def open_image(item: Any) -> Any:
    """A PIL image for a path, URL or data URI (as transformers' load_image opens it); arrays and images as they are."""
    if not isinstance(item, str):
        return item
    try:
        page = page_reference(item) if "#page=" in item else None
        if page is not None:
            return render_page(*page)
        if item.startswith(("http://", "https://")):
            from transformers.image_utils import load_image

            return load_image(item)
        if os.path.isfile(item):
            return decode_image(Path(item).read_bytes())
        payload = item.split(",", 1)[1] if item.startswith("data:image/") else item
        return decode_image(base64.decodebytes(payload.encode()))
    except (OSError, ValueError, SyntaxError) as e:
        raise ValueError(f"cannot open image {item[:64]!r}: {e}") from None


def decode_image(raw: bytes, check: Callable[[int, int], None] | None = None) -> Any:
    """The upright RGB image in `raw`: EXIF orientation applied, alpha dropped (transformers' load_image).

    `check(width, height)` runs on the header's size before any pixel is decoded; it raises to refuse.
    """
    from PIL import Image, ImageOps

    with Image.open(io.BytesIO(raw)) as probe:
        if check is not None:
            check(*probe.size)
        probe.load()
        return ImageOps.exif_transpose(probe).convert("RGB")


def resized_pixels(size: Mapping[str, Any] | None, width: int, height: int) -> int:
    """Pixels of a `width` x `height` image once an image processor with this `size` setting resizes it.

    The processor's resize is its largest allocation (float copies follow at that size): a 1000x1 image
    resized to a 224-pixel shortest edge becomes 224 x 224,000. Fixed `height`/`width`, `shortest_edge`
    (capped by `longest_edge`), `longest_edge`, and `max_pixels`/`min_pixels` are read; any other
    setting counts the image as it is.
    """
    size = size or {}
    if "height" in size and "width" in size:
        return int(size["height"]) * int(size["width"])
    short, long = max(min(width, height), 1), max(width, height, 1)
    scale = 1.0
    if "shortest_edge" in size:
        scale = int(size["shortest_edge"]) / short
        if size.get("longest_edge") and long * scale > int(size["longest_edge"]):
            scale = int(size["longest_edge"]) / long
    elif "longest_edge" in size:
        scale = int(size["longest_edge"]) / long
    elif "max_pixels" in size or "min_pixels" in size:
        pixels = max(width * height, 1)
        target = min(max(pixels, size.get("min_pixels") or 0), size.get("max_pixels") or pixels)
        scale = math.sqrt(target / pixels)
    return math.ceil(width * scale) * math.ceil(height * scale)
