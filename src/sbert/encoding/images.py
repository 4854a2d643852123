"""Images through the encode engine: their vectors from an image-text model.

Which inputs are images and how they open: formats/image_inputs.py. Batches run as text batches run
(backends/base.py `run_threaded`: one single-threaded batch per core, each preparing its own pixels),
on the backend's copy of the chain in its device and dtype; images all cost the same once resized,
so batches are counted in images.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from sbert.backends.base import embed_padded, run_threaded
from sbert.errors import BackendError, SbertError
from sbert.formats.image_inputs import open_image
from sbert.install_hint import install_hint
from sbert.vectors.batching import fixed_batches

# Images per batch when the call names no batch_size: 16 per core-thread kept 2 cores busy on CLIP-B/32.
IMAGE_BATCH = 16


def balanced_batch(count: int, workers: int, cap: int | None = None) -> int:
    """Images per batch: at most `cap` (batch_size, else IMAGE_BATCH), in batches the workers share evenly.

    Every image costs the same, so a batch that runs alone leaves the other cores idle: 96 images in
    sentence-transformers' batches of 32 on 2 cores ran at 0.91x its speed (the third batch alone).
    """
    batches = -(-count // (cap or IMAGE_BATCH))
    batches = -(-max(batches, 1) // workers) * workers
    return max(1, -(-count // batches))


def opened(kind: str, item: Any) -> Any:
    """One item as the processor takes it: an image opened (path, URL, data URI), an (image, text) pair's image too."""
    if kind == "image":
        return open_image(item)
    if kind == "image+text":
        return {**item, "image": open_image(item["image"])}
    return item


def probe_images() -> list[Any]:
    """Two small deterministic photos (a colour gradient each way): what an image graph is exported and checked on."""
    from PIL import Image

    ramp = np.linspace(0, 255, 48, dtype=np.float32)
    grid = np.stack([ramp[None, :].repeat(40, 0), ramp[:40, None].repeat(48, 1), np.full((40, 48), 90.0)], -1)
    return [Image.fromarray(grid.astype("uint8")), Image.fromarray(grid[::-1, ::-1].astype("uint8"))]


def embed_images(engine: Any, images: Sequence[Any], dimension: int, batch_size: int | None,
                 show_progress: bool | None, graph: Any = None, kind: str = "image",
                 system: str = "") -> np.ndarray:  # fmt: skip
    """float32 (len(images), dimension): row i embeds images[i], through the engine's copy of the chain.

    `kind` is what the items are: images, or the input module's other kinds (sounds, (image, text) pairs),
    each prepared by the module's own processor (modules/multimodal.py `kind_features`); `system`: a chat
    model's prompt, put before each input as a system message.

    With `graph` (an image graph on ONNX Runtime or OpenVINO), the pixels the chain's processor makes run
    there instead, one batch at a time on the runtime's own threads, while the other workers decode and
    resize the next batches.
    """
    modules = getattr(engine, "modules", None)
    if modules is None or kind not in getattr(modules[0], "modalities", ()):
        raise BackendError(f"backend {engine.name!r} embeds text only: {kind} inputs run on the torch backend")
    first = modules[0]
    try:
        import PIL  # noqa: F401  (the processors and load_image need it)
    except ImportError:
        raise SbertError(f"images need Pillow: {install_hint('image')}") from None
    buffer = np.empty((len(images), dimension), dtype=np.float32)

    one_graph = threading.Lock()

    def job(batch: list[int]) -> tuple[list[int], np.ndarray]:
        features = first.kind_features(kind, [opened(kind, images[i]) for i in batch], system or None)
        if graph is not None:  # the runtime's threads take every core: one batch at a time runs on it
            with one_graph:
                return batch, graph.embed(features)
        with torch.inference_mode():
            return batch, embed_padded(modules, features, engine.device).float().cpu().numpy()

    workers = getattr(engine, "workers", 1)
    unit = {"image": "img", "audio": "sound", "text": "text", "message": "chat"}.get(kind, "pair")
    batches = fixed_batches(list(range(len(images))), balanced_batch(len(images), workers, batch_size))
    with tqdm(total=len(images), unit=unit, disable=not show_progress) as bar:
        for rows, vectors in run_threaded(batches, job, workers):
            buffer[rows] = vectors
            bar.update(len(rows))
    return buffer
