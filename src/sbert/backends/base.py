"""The contract between the encode engine and a backend.

The engine hands a backend token ids and batches (lists of row indices); the backend hands back
`(rows, vectors)` pairs, in any grouping, until every row was embedded. A backend sees a `Chain`
(the modules and how to describe them), never the SentenceEncoder, so nothing here imports
model.py.
"""

from __future__ import annotations

import contextlib
import copy
import ctypes
import functools
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np
import torch
from torch import nn

from sbert.backends.pages import Drop, unwritten_releaser
from sbert.errors import BackendError
from sbert.modules import INPUT_MODULES, Features, Module, Transformer

# fp32 must match torch to rounding; int8 trades a little accuracy for speed, so its guard is
# on direction (cosine to the torch vector), the STS benchmark check lives in `sbert export --check`.
FP32_MAX_ABS_DIFF = 1e-4
INT8_MIN_COSINE = 0.9
# A cross-encoder's rows are one to a few logits, where a cosine only compares signs: its int8
# guard is on the logits themselves.
SCORE_COLUMNS, INT8_MAX_LOGIT_DIFF = 4, 0.5
PROBES = (
    "A man is playing a guitar.",
    "Two dogs run across a snowy field while children watch from the porch.",
    "ok",
    "The quarterly report, which was delayed twice, finally shows revenue growing in every region "
    "except the north-east, where a warehouse fire interrupted deliveries for most of March.",
)
# (They live here, not with ONNX Runtime: the torch-int8 backend checks itself the same way, and
# a run-only install has no onnx.)

# Models whose weights pass this are "large" (a 0.6B decoder is 2.2 GiB in fp32, BERT-base 0.4):
# their engines trade a little speed for memory (one OpenVINO compile, the heap trimmed per batch).
LARGE_WEIGHTS_BYTES = 512 * 2**20

# Row ids of a batch and their float32 vectors, (len(rows), dim).
Rows = tuple[list[int], np.ndarray]
T = TypeVar("T")  # what a batch job returns (Rows for the dense backends)


@dataclass(frozen=True)
class Chain:
    """What a backend needs of a model: its modules in order and facts about them."""

    modules: tuple[Module, ...]  # an input module first (a Transformer, a word or static table), then pooling and heads
    dimension: int  # size of the sentence vector
    device: torch.device  # where the modules' weights live
    digest: Callable[[], str]  # sha256 of weights and configs (cached by the model)
    source_dir: Path | None  # the folder the model came from (ONNX graphs are cached beside it)

    @property
    def transformer(self) -> Transformer:
        """The encoder at the head of the chain."""
        first = self.modules[0]
        assert isinstance(first, Transformer)
        return first

    def pad(self, rows: Sequence[Sequence[int]]) -> Features:
        """Padded token features for a batch of id lists (on the host), by the module that starts the chain."""
        first = self.modules[0]
        assert isinstance(first, INPUT_MODULES)
        return first.pad(rows)


def probe_features(transformer: Transformer) -> Features:
    """The padded features of PROBES, the sentences every backend's start check embeds both ways."""
    return transformer.pad(transformer.token_ids(list(PROBES))[0])


def run_chain(modules: Sequence[Module], features: Features) -> Features:
    """Every module in order on a padded features dict (the SentenceEncoder forward)."""
    for module in modules:
        features = module(features)
    return features


def embed_padded(modules: Sequence[Module], features: Features, device: torch.device, skip: int = 0) -> torch.Tensor:
    """Sentence embeddings (B, dim) of padded host features, on `device`, in the modules' dtype.

    `skip` > 0 hands Pooling each row's prompt length, so a pooling with include_prompt=false leaves it out.
    """
    moved = {k: v.to(device, non_blocking=True) for k, v in features.items()}
    if skip:
        moved["prompt_length"] = torch.full((moved["input_ids"].shape[0],), skip, device=device)
    return run_chain(modules, moved)["sentence_embedding"]


def weight_bytes(modules: Sequence[Module]) -> int:
    """Bytes of the modules' weights (parameters and buffers) in the dtypes they are held in.

    A submodule holding weights outside its parameters (torch-int8's prepacked Linears) says how
    many bytes in a `held_bytes` attribute.
    """
    tensors = {id(t): t for m in modules for t in (*m.parameters(), *m.buffers())}
    held = sum(getattr(sub, "held_bytes", 0) for m in modules for sub in m.modules())
    return held + sum(t.numel() * t.element_size() for t in tensors.values())


def is_large(modules: Sequence[Module]) -> bool:
    """Whether these weights pass LARGE_WEIGHTS_BYTES: the one place engines ask "is this model large?"."""
    return weight_bytes(modules) > LARGE_WEIGHTS_BYTES


def large_releaser(modules: Sequence[Module]) -> Drop | None:
    """`pages.unwritten_releaser()` for a large model's weights; None for others (not worth the pages read again)."""
    return unwritten_releaser() if is_large(modules) else None


def cast_copy(
    modules: Sequence[Module], device: torch.device, dtype: torch.dtype, force: bool = False
) -> tuple[Module, ...]:
    """The modules as they run on `device` in `dtype`: themselves when nothing changes, else a copy.

    The copy is made once per weights state: the model's own fp32 weights stay the training
    master, and a cast in place would change what the user holds.
    """
    if not force and all(p.device == device and p.dtype == dtype for m in modules for p in m.parameters()):
        return tuple(modules)
    # Each tensor is cast (and moved) on its own through deepcopy's memo: a deepcopy first would hold
    # a second full-precision copy beside the original (a 0.6B model's bf16 copy peaked at 5.1 GiB,
    # 3.8 GiB this way), and on a GPU no full copy ever lands in the source precision.
    memo: dict[int, object] = {}
    # A large model's source weights that nothing wrote go back to the page cache as each is cast:
    # the user's model stays whole (read in again on use) and only the copy stays resident.
    drop = large_releaser(modules)
    for module in modules:
        for tensor in (*module.parameters(), *module.buffers()):
            if id(tensor) not in memo:
                memo[id(tensor)] = cast = _cast(tensor, device, dtype)
                if drop is not None and cast.data_ptr() != tensor.data_ptr():
                    drop(tensor)
    copied = copy.deepcopy(nn.ModuleList(modules), memo).eval()
    return tuple(m for m in copied)  # type: ignore[misc]


def _cast(tensor: torch.Tensor, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """`tensor` on `device`, floating ones in `dtype` (as Module.to casts them); a Parameter stays one."""
    moved = tensor.detach().to(device=device, dtype=dtype if tensor.is_floating_point() else tensor.dtype)
    if isinstance(tensor, nn.Parameter):
        return nn.Parameter(moved, requires_grad=tensor.requires_grad)
    return moved


# The thread budget of the calling thread when it is a serving lane (serve/scheduler.py), else unset.
_LANE = threading.local()


def own_threads(threads: int, default: int) -> None:
    """Torch's intra-op threads for the calling thread alone; a thread new to torch later still starts with `default`.

    `torch.set_num_threads` also stores the count that every thread torch meets afterwards starts with
    (ATen sets a new thread up with the count any thread set last). Pool and lane threads setting their own
    count of 1 so made each thread started after them run on one core: a server's encode thread (a one-text
    encode takes 1.5x as long on one core as on two), a web app's request threads. A short-lived thread puts the
    default back (about 0.1 ms, once per change of the calling thread's count).
    """
    # A thread's first op sets it up with the count set last by any thread, over its own: asked first, the
    # set-up is done before this thread's count is set (else the pool's threads ran on `default` threads).
    torch.get_num_threads()
    torch.set_num_threads(threads)
    if threads != default:
        keeper = threading.Thread(target=torch.set_num_threads, args=(default,), name="sbert-threads")
        keeper.start()
        keeper.join()


def release_openmp_workers() -> bool:
    """Let the calling thread's OpenMP worker threads go (True when the runtime took the request).

    GNU OpenMP keeps a team of workers for each thread that ran a torch op on several threads, for that
    thread's life, and once the teams together outnumber the cores every worker sleeps between ops instead
    of spinning (serve/scheduler.py `model_thread`). A server loads and warms its models on one thread and
    runs them on another: the loading thread's team goes before the first request. Found among the
    process's mapped libraries (the runtime torch itself loaded); a no-op where there is none (macOS,
    a torch without OpenMP).
    """
    runtime = _openmp_runtime()
    return runtime is not None and runtime.omp_pause_resource_all(2) == 0  # 2: omp_pause_hard


@functools.cache
def _openmp_runtime() -> ctypes.CDLL | None:
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/lib" in line and "omp" in line}
    except OSError:
        return None
    for path in sorted(paths):
        if os.path.basename(path).startswith(("libgomp", "libiomp", "libomp")):
            runtime = ctypes.CDLL(path)  # already loaded by torch: the same library, not a second copy
            if hasattr(runtime, "omp_pause_resource_all"):
                return runtime
    return None


@contextlib.contextmanager
def lane_threads(threads: int, default: int) -> Iterator[None]:
    """Run the block as a lane of `threads` cores: torch's intra-op threads and the backends' workers.

    `default` is the process's count (every core), which threads new to torch keep starting with. Said
    explicitly, not read back from torch: a thread new to torch starts with whatever count was set last.
    """
    before = getattr(_LANE, "threads", None)
    _LANE.threads = threads
    if torch.get_num_threads() != threads:
        own_threads(threads, default)
    try:
        yield
    finally:
        _LANE.threads = before


def lane_workers(workers: int) -> int:
    """A backend's workers for this call: at most the lane's threads when the caller is a serving lane.

    A lane on one thread (serve/scheduler.py runs one group per core at a time) gets its batches one
    after another on its own thread, not spread over cores another lane uses.
    """
    threads = getattr(_LANE, "threads", None)
    return workers if threads is None else max(1, min(workers, threads))


def run_threaded(batches: list[list[int]], job: Callable[[list[int]], T], workers: int) -> Iterator[T]:
    """`job` over the batches in order, `workers` at a time from threads (each with one torch thread).

    On CPU one single-threaded batch per core beat one batch spread over all cores (small
    matrices lose much of a multi-threaded op to synchronisation): torch +12%, ONNX Runtime
    +15% on 2 cores. torch's thread count is per thread, so the caller's setting is untouched.
    """
    workers = lane_workers(workers)
    if workers <= 1 or len(batches) <= 1:
        yield from map(job, batches)
        return
    yield from batch_pool(workers).map(job, batches)


# One pool per worker count, kept for the process: a server runs a call per merged group of requests, and
# starting two threads per call (each new to torch) cost 1-4% of a one-text request's CPU.
# Keyed by process id too: a forked child inherits the pool object but none of its threads.
_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def batch_pool(workers: int) -> ThreadPoolExecutor:
    """The process's pool of `workers` threads, each running torch on one thread (made on first use)."""
    key = (os.getpid(), workers)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            # Each worker on one thread; the creating thread's count stays the one every new thread starts with.
            setup = (1, torch.get_num_threads())
            pool = _POOLS[key] = ThreadPoolExecutor(
                workers, thread_name_prefix="sbert-batch", initializer=own_threads, initargs=setup
            )
        return pool


class Backend(Protocol):
    """What the engine calls; one implementation per file in this folder."""

    name: str
    default_batch_tokens: int
    max_rows: int
    workers: int  # batches run at a time: one per core on the CPU, 1 on a GPU

    @property
    def packed(self) -> bool:
        """Whether batches count real tokens (True) or padded rows x longest row (False)."""
        ...

    def run(self, ids: Sequence[Sequence[int]], batches: list[list[int]], skip: int = 0) -> Iterator[Rows]:
        """Embed the rows of every batch; yields (rows, float32 vectors) until all are done.

        `skip` > 0: the first `skip` positions of every row (a prompt, encoding/prompted.py) stay out of pooling.
        """
        ...


def refuse_prompt_skip(name: str, skip: int) -> None:
    """A one-line error from a backend whose graph pools every token, asked to leave a prompt out."""
    if skip:
        raise BackendError(
            f"backend {name!r} pools every token of its exported graph; this model's Pooling has include_prompt=false "
            "and the call has a prompt: use backend='torch'"
        )
