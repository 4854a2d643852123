"""Images through the encode engine: which inputs are images, and their vectors from an image-text model.

An input is an image as sentence-transformers 6.2 reads one: a PIL image, a `data:image/...` URI, an
existing file (or an http(s) URL) with an image suffix, an HWC array or tensor, or `{"image": x}`. A
batch holds one kind of input (6.2's rule). Strings and files are opened by transformers' own
`load_image`; the model's processor does the rest. Batches run as text batches run (backends/base.py
`run_threaded`: one single-threaded batch per core, each preparing its own pixels), on the backend's
copy of the chain in its device and dtype; images all cost the same once resized, so batches are
counted in images.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from sbert.backends.base import embed_padded, run_threaded
from sbert.errors import BackendError, SbertError
from sbert.install_hint import install_hint
from sbert.vectors.batching import fixed_batches

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".tiff", ".webp")
# Images per batch when the call names no batch_size: 16 per core-thread kept 2 cores busy on CLIP-B/32.
IMAGE_BATCH = 16


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


def balanced_batch(count: int, workers: int) -> int:
    """Images per batch: at most IMAGE_BATCH, in a number of batches the workers share evenly.

    Every image costs the same, so a last batch that runs alone leaves the other cores idle: 48 images
    in batches of 16 on 2 cores ran at 11.9 images/s where 4 batches of 12 keep both busy.
    """
    batches = -(-count // IMAGE_BATCH)
    batches = -(-max(batches, 1) // workers) * workers
    return max(1, -(-count // batches))


def embed_images(engine: Any, images: Sequence[Any], dimension: int, batch_size: int | None,
                 show_progress: bool | None) -> np.ndarray:  # fmt: skip
    """float32 (len(images), dimension): row i embeds images[i], through the engine's copy of the chain."""
    modules = getattr(engine, "modules", None)
    if modules is None or "image" not in getattr(modules[0], "modalities", ()):
        raise BackendError(f"backend {engine.name!r} embeds text only: images run on the torch backend")
    first = modules[0]
    try:
        import PIL  # noqa: F401  (the processors and load_image need it)
    except ImportError:
        raise SbertError(f"images need Pillow: {install_hint('image')}") from None
    buffer = np.empty((len(images), dimension), dtype=np.float32)

    def job(batch: list[int]) -> tuple[list[int], np.ndarray]:
        features = first.image_features([open_image(images[i]) for i in batch])
        with torch.inference_mode():
            return batch, embed_padded(modules, features, engine.device).float().cpu().numpy()

    workers = getattr(engine, "workers", 1)
    batches = fixed_batches(list(range(len(images))), batch_size or balanced_batch(len(images), workers))
    with tqdm(total=len(images), unit="img", disable=not show_progress) as bar:
        for rows, vectors in run_threaded(batches, job, workers):
            buffer[rows] = vectors
            bar.update(len(rows))
    return buffer
