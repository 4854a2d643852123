"""Encode corpora larger than memory: ordered .npy shards on disk, resumable after a kill.

Layout of the output folder: `manifest.json` (model digest, dimension, shard size, settings)
and `shard-00000.npy`, `shard-00001.npy`, ... holding rows 0..S-1, S..2S-1, ... of the input.
Each shard is written to a temp file and renamed, so a shard file is either complete or absent;
a rerun with the same settings skips every complete shard and encodes the rest.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch
from tqdm.auto import tqdm

from sbert.errors import ModelFormatError, SbertError
from sbert.formats import layout

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder
    from sbert.static import StaticEncoder

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class ShardSettings:
    """What decides the bytes of a shard: a folder is resumed only under the same settings."""

    model_digest: str
    dimension: int
    shard_size: int
    normalize: bool
    backend: str
    precision: str  # the resolved dtype (fp32 / bf16 / fp16), not "auto"
    prompt: str = ""  # the text put in front of every input (encoding/prompted.py)


def shard_path(out_dir: Path, index: int) -> Path:
    """The file for shard `index`."""
    return out_dir / f"shard-{index:05d}.npy"


def encode_to_disk(
    model: SentenceEncoder | StaticEncoder,
    sentences: Iterable[str],
    out_dir: str | os.PathLike[str],
    shard_size: int = 100_000,
    *,
    normalize: bool = False,
    backend: str = "torch",
    batch_tokens: int | None = None,
    precision: str = "auto",
    total: int | None = None,
    processes: int = 1,
    show_progress: bool = True,
    task: str | None = None,
) -> int:
    """Stream `sentences` into ordered shards under `out_dir`; returns the number of rows.

    `task` ("query" / "document") picks the model's prompt as encode does (else its default prompt);
    the manifest records the prompt text, so a run under another prompt cannot resume the shards.

    Memory holds one shard of text and vectors per process at a time. `processes` > 1 runs
    that many workers (each with an equal share of torch's threads) on models loaded from
    a folder.
    """
    if shard_size <= 0 or processes <= 0:
        raise ValueError(f"shard_size and processes must be positive, got {shard_size} and {processes}")
    out = Path(out_dir)
    # What runs, recorded: openvino in bf16 must not resume into its fp32 shards, nor a static table's
    # own path into torch's. The model refuses options it cannot run (a static table in processes).
    ran_backend, ran_precision = model.run_plan(backend, precision, processes)
    prompt = model.prompt_plan(task=task).text
    settings = ShardSettings(
        model.weights_digest(), model.embedding_dimension, shard_size, normalize, ran_backend, ran_precision, prompt
    )
    check_settings(out, settings)
    if total is None and hasattr(sentences, "__len__"):
        total = len(sentences)  # type: ignore[arg-type]
    options = {"normalize": normalize, "backend": ran_backend, "batch_tokens": batch_tokens, "precision": precision,
               "prompt": prompt}  # fmt: skip
    rows = 0
    with tqdm(total=total, unit="sent", disable=not show_progress, smoothing=0.05) as bar:
        if processes == 1:
            for index, texts in enumerate(chunks(sentences, shard_size)):
                rows += write_shard(model, out, index, texts, options)
                bar.update(len(texts))
        else:
            # run_plan refused processes > 1 for a model that cannot load in workers (a static table)
            rows = _pooled(cast("SentenceEncoder", model), out, chunks(sentences, shard_size), options, processes, bar)
    manifest = asdict(settings) | {"rows": rows, "shards": -(-rows // shard_size), "complete": True}
    _write_manifest(out, manifest)
    return rows


def chunks(items: Iterable[str], size: int) -> Iterator[list[str]]:
    """Consecutive lists of `size` items (the last may be shorter), read lazily."""
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def check_settings(out: Path, settings: ShardSettings) -> None:
    """Create the folder's manifest, or refuse to mix shards made under other settings."""
    found = _read_manifest(out)
    if found is None:
        if out.exists() and any(out.glob("shard-*.npy")):
            raise SbertError(f"{out}: holds shards but no {MANIFEST}; use an empty folder")
        _write_manifest(out, asdict(settings) | {"complete": False})
        return
    for key, value in asdict(settings).items():
        if found.get(key) != value:
            raise SbertError(
                f"{out}: shards there were made with {key}={found.get(key)!r}, this run has {value!r}; "
                "use another folder or the same settings"
            )


def write_shard(
    model: SentenceEncoder | StaticEncoder, out: Path, index: int, texts: list[str], options: dict[str, Any]
) -> int:
    """Encode one shard unless a complete copy is already on disk; returns its row count."""
    path = shard_path(out, index)
    if _complete(path, len(texts), model.embedding_dimension):
        return len(texts)
    vectors = model.encode(texts, show_progress=False, on_truncation="ignore", **options)
    with layout.atomic_file(path) as f:
        np.save(f, vectors)
    return len(texts)


def _complete(path: Path, rows: int, dim: int) -> bool:
    """A shard that loads with the expected shape; an unreadable one is simply redone."""
    if not path.is_file():
        return False
    try:
        array = np.load(path, mmap_mode="r")
    except (OSError, ValueError):
        return False
    return bool(array.shape == (rows, dim) and array.dtype == np.float32)


def load_shards(out_dir: str | os.PathLike[str]) -> np.ndarray:
    """All rows of a finished folder, in input order, as one float32 array."""
    out = Path(out_dir)
    manifest = _read_manifest(out)
    if manifest is None or not manifest.get("complete"):
        raise SbertError(f"{out}: not a finished shard folder (no complete {MANIFEST}); rerun encode to finish it")
    parts = []
    for index in range(int(manifest["shards"])):
        path = shard_path(out, index)
        try:
            parts.append(np.load(path, mmap_mode="r"))
        except (OSError, ValueError) as e:
            raise SbertError(f"{path}: unreadable shard ({e}); rerun encode on the same folder to redo it") from None
    if not parts:
        return np.empty((0, int(manifest["dimension"])), dtype=np.float32)
    return np.concatenate(parts)


def _read_manifest(out: Path) -> dict[str, Any] | None:
    if not (out / MANIFEST).is_file():
        return None
    try:
        data = layout.read_json(out / MANIFEST)
    except ModelFormatError as e:
        raise SbertError(str(e)) from None
    return data if isinstance(data, dict) else None


def _write_manifest(out: Path, data: dict[str, Any]) -> None:
    layout.write_json_atomic(out / MANIFEST, data)


# ---- the multi-process pool: each worker loads the model once and writes its shards itself.

_WORKER: dict[str, Any] = {}


def _pooled(
    model: SentenceEncoder,
    out: Path,
    shards: Iterator[list[str]],
    options: dict[str, Any],
    processes: int,
    bar: tqdm,
) -> int:
    if model.source_dir is None:
        raise SbertError("processes > 1 needs a model loaded from a folder (save it first)")
    if options["backend"] != "torch":
        model.encode(["export the graph once, before the workers race to"], backend=options["backend"])
    threads = max(1, torch.get_num_threads() // processes)
    # The class travels by reference (pickled as its import path): this module never imports model.py.
    init = (type(model), str(model.source_dir), str(model.device), threads, model.weights_digest(), model.held_dtype)
    rows = 0
    with ProcessPoolExecutor(processes, mp_context=get_context("spawn"), initializer=_init, initargs=init) as pool:
        pending: list[Future[int]] = []
        for index, texts in enumerate(shards):
            pending.append(pool.submit(_work, out, index, texts, options))
            # At most two shards in flight per worker keeps memory bounded.
            while len(pending) >= 2 * processes:
                rows += _collect(pending.pop(0), bar)
        for future in pending:
            rows += _collect(future, bar)
    return rows


def _collect(future: Future[int], bar: tqdm) -> int:
    count = future.result()
    bar.update(count)
    return count


def _init(
    loader: type[SentenceEncoder], source: str, device: str, threads: int, digest: str, dtype: str | torch.dtype | None
) -> None:
    torch.set_num_threads(threads)
    model = loader.load(source, device=device, dtype=dtype)  # held as the parent holds it: the digests then agree
    _WORKER["model"] = model
    _WORKER["same"] = model.weights_digest() == digest


def _work(out: Path, index: int, texts: list[str], options: dict[str, Any]) -> int:
    if not _WORKER["same"]:  # the in-memory model was changed after loading from its folder
        raise SbertError("the model in memory differs from its folder; save it and load that copy")
    return write_shard(_WORKER["model"], out, index, texts, options)
