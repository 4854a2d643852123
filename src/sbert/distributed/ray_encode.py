"""Encode a Ray Dataset in a `map_batches` actor pool: one model per actor, token-budget batching inside.

Rows keep their columns and gain `embedding` (fixed-size list of float32, readable by any Parquet
reader). Ray Data restarts a killed actor and re-runs its unfinished batches; a batch's output only
counts once it is complete, so every input row comes out exactly once.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sbert.errors import SbertError

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

EMBEDDING_COLUMN = "embedding"
# Rows per actor call on a GPU: a few packed 64k-token batches of sentences, so one call's
# fixed costs (Arrow conversion, the engine's pipeline start) are spread over enough work.
GPU_ROWS_PER_CALL = 16_384
log = logging.getLogger(__name__)


class EncodeActor:
    """One loaded model per actor; each call embeds one batch of rows."""

    def __init__(
        self, model: str, text_column: str, options: dict[str, Any], threads: int, device: str | None,
        dtype: str | None = None,
    ) -> None:  # fmt: skip
        import torch

        from sbert.dense.model import SentenceEncoder

        torch.set_num_threads(max(1, threads))  # the actor's share of the node, not every core
        self.model = SentenceEncoder.load(model, device=device, dtype=dtype)
        self.text_column, self.options = text_column, options

    def __call__(self, batch: pa.Table) -> pa.Table:
        """The batch with an `embedding` column added."""
        import pyarrow as pa

        texts = [t if t is not None else "" for t in batch.column(self.text_column).to_pylist()]
        vectors = np.ascontiguousarray(self.model.encode(texts, show_progress=False, **self.options), dtype=np.float32)
        values = pa.array(vectors.reshape(-1), type=pa.float32())
        return batch.append_column(EMBEDDING_COLUMN, pa.FixedSizeListArray.from_arrays(values, vectors.shape[1]))


def encode_dataset(
    ds: ray.data.Dataset,
    model: str,
    *,
    text_column: str = "text",
    backend: str = "torch",
    batch_tokens: int | None = None,
    normalize: bool = False,
    actors: int = 2,
    cpus_per_actor: float = 1.0,
    batch_size: int = 512,
    device: str | None = None,
    gpus_per_actor: float = 0.0,
    precision: str = "auto",
    dtype: str | None = None,
) -> ray.data.Dataset:
    """`ds` with an `embedding` column, computed by `actors` model replicas (lazy: runs when consumed).

    With `gpus_per_actor` > 0 Ray places each replica on a GPU (fractions share one) and the
    replica runs the packed CUDA engine there; rows per call then grow to fill its token budget.
    `dtype` is how each replica holds the weights (SentenceEncoder.load's: bf16, fp16, int8, ...).
    """
    if text_column not in ds.schema().names:
        raise SbertError(f"no column {text_column!r} in the dataset; columns: {', '.join(ds.schema().names)}")
    options = {"backend": backend, "batch_tokens": batch_tokens, "normalize": normalize, "on_truncation": "ignore",
               "precision": precision}  # fmt: skip
    if gpus_per_actor < 0:
        raise SbertError(f"gpus_per_actor={gpus_per_actor}: must be >= 0")
    if gpus_per_actor > 0:
        device = device or "cuda"  # Ray sets CUDA_VISIBLE_DEVICES to the actor's GPU
        batch_size = max(batch_size, GPU_ROWS_PER_CALL)
    threads = max(1, round(cpus_per_actor))  # torch threads: the cores the actor was asked to use
    return ds.map_batches(
        EncodeActor,
        fn_constructor_args=(model, text_column, options, threads, device, dtype),
        batch_size=batch_size,
        batch_format="pyarrow",
        concurrency=actors,
        num_cpus=_fit_reservation(actors, cpus_per_actor),
        num_gpus=gpus_per_actor or None,
        # Ray Data's actor pools default to max_restarts=-1 and max_task_retries=-1: a killed actor
        # comes back and its unfinished batches run again (tests/test_distributed.py kills one).
    )


def _fit_reservation(actors: int, cpus_per_actor: float) -> float:
    """The CPUs each actor reserves in Ray's scheduler, shrunk so that one CPU stays free.

    Ray Data's read and write tasks need a CPU of their own: a pool holding every CPU of a fixed
    cluster waits forever for input (seen on `ray.init(num_cpus=2)` with two 1-CPU actors). The
    reservation is bookkeeping; the actors still run `round(cpus_per_actor)` threads each.
    """
    import ray

    if actors < 1 or cpus_per_actor <= 0:
        raise SbertError(f"actors={actors}, cpus_per_actor={cpus_per_actor}: need at least one actor and some CPU")
    total = float(ray.cluster_resources().get("CPU", 0))
    if total <= 1 or actors * cpus_per_actor <= total - 1:
        return cpus_per_actor
    fitted = (total - 1) / actors
    log.warning("%d actors x %.2f CPUs leave no CPU for reading and writing on %g CPUs: reserving %.2f each",
                actors, cpus_per_actor, total, fitted)  # fmt: skip
    return fitted


def read_input(path: str, text_column: str, id_column: str, staging: Path) -> ray.data.Dataset:
    """Parquet (file or folder) or JSONL with text and id columns; a text file gets line numbers as ids."""
    import ray.data

    source = Path(path)
    if "://" not in path and not source.exists():  # s3://, gs://, ... are checked by Ray itself
        raise SbertError(f"{path}: no such file or folder")
    if source.suffix in {".jsonl", ".json"}:
        ds = ray.data.read_json(path, lines=True)
    elif source.suffix == ".parquet" or source.is_dir():
        ds = ray.data.read_parquet(path)
    else:
        ds = ray.data.read_parquet(str(_stage_text(source, text_column, id_column, staging)))
    missing = [c for c in (text_column, id_column) if c not in ds.schema().names]
    if missing:
        raise SbertError(f"{path}: no column {missing[0]!r}; columns: {', '.join(ds.schema().names)}")
    return ds


def _stage_text(source: Path, text_column: str, id_column: str, staging: Path) -> Path:
    # Plain lines carry no ids, so the driver streams them once into Parquet with line numbers
    # (0-based, blank lines kept, as `sbert encode` numbers them); memory stays one chunk. The
    # staged file is on the driver's disk: a multi-node cluster wants Parquet/JSONL on shared storage.
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sbert.data.common import read_lines

    staging.mkdir(parents=True, exist_ok=True)
    target = staging / "input.parquet"
    schema = pa.schema([(id_column, pa.int64()), (text_column, pa.string())])
    with pq.ParquetWriter(target, schema) as writer:
        ids: list[int] = []
        texts: list[str] = []
        for line_no, line in read_lines(source):
            ids.append(line_no - 1)
            texts.append(line)
            if len(ids) == 50_000:
                writer.write_table(pa.table({id_column: ids, text_column: texts}, schema=schema))
                ids, texts = [], []
        if ids:
            writer.write_table(pa.table({id_column: ids, text_column: texts}, schema=schema))
    return target


def write_output(ds: ray.data.Dataset, output: str) -> int:
    """Write Parquet files into `output` atomically (a temp folder renamed at the end); rows written."""
    target = Path(output)
    if target.exists():
        raise SbertError(f"{output}: already exists; choose a new output folder")
    tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        ds.write_parquet(str(tmp))
        rows = sum(_rows(p) for p in tmp.glob("*.parquet"))
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def _rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)
