"""Image inputs as sentence-transformers 6.2 reads them: which inputs are images, and opening them.

An input is an image when it is a PIL image, a `data:image/...` URI, an existing file (or an http(s) URL)
with an image suffix, an HWC array or tensor, or `{"image": x}`; a batch holds one kind of input (6.2's
rule). Strings and files are opened by transformers' own `load_image`; the model's processor does the rest.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".tiff", ".webp")


def is_image_string(text: str) -> bool:
    """A data URI, an http(s) URL ending in an image suffix, or an existing image file."""
    if text.startswith("data:image/"):
        return True
    lowered = text.lower()
    if lowered.startswith(("http://", "https://")) and " " not in text:
        return lowered.split("?", 1)[0].endswith(IMAGE_SUFFIXES)
    return lowered.endswith(IMAGE_SUFFIXES) and os.path.isfile(text)


def image_files(folder: str | os.PathLike[str]) -> list[str]:
    """Every image file under `folder` (suffix by IMAGE_SUFFIXES), as absolute paths in sorted order."""
    root = Path(folder).resolve()
    return sorted(str(p) for p in root.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)


def input_kind(item: Any) -> str:
    """The kind of one input: image or text (other kinds: their name, which the caller refuses)."""
    if isinstance(item, dict):
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


def split_images(inputs: Any) -> tuple[list[Any], bool] | None:
    """(images, single) when `inputs` is an image or a batch of them; None for text. A mixed batch: 6.2's error."""
    single = not isinstance(inputs, list | tuple) and (
        not isinstance(inputs, Iterable) or isinstance(inputs, str | dict) or getattr(inputs, "ndim", 0) == 3
    )
    items = [inputs] if single else list(inputs)
    kinds = {input_kind(item) for item in items}
    if "image" not in kinds:
        return None
    if kinds != {"image"}:  # sentence-transformers 6.2's words
        raise ValueError(f"This batch mixes multiple modalities ({', '.join(sorted(kinds))}), which this "
                         "SentenceTransformer model cannot encode in a single batch. Encode each modality separately "
                         "(one call per modality).")  # fmt: skip
    return [item["image"] if isinstance(item, dict) else item for item in items], single


def open_image(item: Any) -> Any:
    """A PIL image for a path, URL or data URI (transformers' load_image); arrays and images as they are."""
    if not isinstance(item, str):
        return item
    from transformers.image_utils import load_image

    try:
        return load_image(item)
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot open image {item[:64]!r}: {e}") from None
