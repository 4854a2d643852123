"""Several devices at once: one worker process per device, each with the whole pipeline, one ordered output.

`encode(texts, devices=["cuda:0", "cuda:1"])` sends each worker interleaved stripes of the
inputs sorted by length (so every worker gets a similar mix of long and short ones); each worker
tokenizes, batches and embeds its stripes itself, and rows are put back in input order. The
same code runs two CPU workers, which is how CI tests it.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Protocol

import numpy as np
import torch
from tqdm.auto import tqdm

from sbert.device import resolve_device
from sbert.encoding.engine import PROGRESS_MIN_SENTENCES


class Encoder(Protocol):
    """What a worker needs of the model (a SentenceEncoder): its width and its encode.

    A protocol, not the class: the runtime sits below the model kinds and never imports them. The
    model object itself travels to each worker (as sentence-transformers' pool hands it over), so
    settings changed in memory (a pooling flag, max_seq_length, an adapter) hold there too.
    """

    @property
    def embedding_dimension(self) -> int:
        """Width of each row."""
        ...

    @property
    def encode(self) -> Callable[..., Any]:
        """The model's encode: (n, dim) rows for a list of texts."""
        ...


STRIPES_PER_WORKER = 4  # more, smaller parts let a faster device take more of them
_WORKER: dict[str, Any] = {}


def stripes(texts: list[str], parts: int) -> list[np.ndarray]:
    """Row indices for each part: the inputs sorted by length, dealt out in turn."""
    order = np.argsort([-len(t) for t in texts], kind="stable")
    return [order[k::parts] for k in range(parts) if len(order[k::parts])]


def encode_on_devices(
    model: Encoder, texts: list[str], devices: list[str], options: dict[str, Any], show: bool | None
) -> np.ndarray:
    """float32 (len(texts), dim) embedded by one worker process per entry of `devices`."""
    resolved = [str(resolve_device(d)) for d in devices]
    out = np.empty((len(texts), model.embedding_dimension), dtype=np.float32)
    if not texts:
        return out
    cpu_workers = sum(d == "cpu" for d in resolved)
    threads = max(1, torch.get_num_threads() // max(cpu_workers, 1))
    context = multiprocessing.get_context("spawn")
    slots: Any = context.Queue()
    for device in resolved:
        slots.put(device)
    # The model is pickled into each worker by torch's multiprocessing reductions: CPU weights go
    # through shared memory, CUDA weights through CUDA IPC; its cached engines stay behind.
    init = (model, slots, threads)
    parts = stripes(texts, STRIPES_PER_WORKER * len(resolved))
    show = len(texts) >= PROGRESS_MIN_SENTENCES if show is None else show
    with (
        ProcessPoolExecutor(len(resolved), mp_context=context, initializer=_init, initargs=init) as pool,
        tqdm(total=len(texts), unit="sent", disable=not show) as bar,
    ):
        futures = [(rows, pool.submit(_encode, [texts[i] for i in rows], options)) for rows in parts]
        for rows, future in futures:
            out[rows] = future.result()
            bar.update(len(rows))
    return out


def _init(model: Any, slots: Any, threads: int) -> None:
    device = slots.get()
    torch.set_num_threads(threads)
    _WORKER["model"] = model.to(device)


def _encode(texts: list[str], options: dict[str, Any]) -> np.ndarray:
    vectors: np.ndarray = _WORKER["model"].encode(texts, show_progress=False, **options)
    return vectors
