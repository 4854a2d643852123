"""Dynamic batching: concurrent requests merged into token-budget groups, `lanes` groups on the model at a time.

With one lane (a GPU, or a backend that spreads its own work) a group gets every core. With one lane per
CPU core, each group runs on one thread (its backend then runs its batches one after another:
backends/base.py `lane_workers`) while the next group forms and starts on the other core: small groups of
short requests cost less CPU this way than one group cut across cores. A large group that starts while no
other runs and nothing waits takes every core, so a lone large request is as fast as with one lane.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from sbert.serve.metrics import Metrics


class QueueFull(Exception):  # noqa: N818  (a condition, not a bug: the route answers 503)
    """More texts are waiting than the server accepts."""


class ClientGone(Exception):  # noqa: N818  (a condition: nobody is left to answer)
    """The client disconnected while its texts were waiting."""


CPU_GROUP_TOKENS = 8192  # tokens per merged group of requests on the CPU (serve/server.py's group_budget)
# With lanes, a group of at least this many tokens (two CPU batches: backends/base.py) that starts alone
# runs on every core; other groups run on one thread each, one per core, except small ones (below).
LANE_ALONE_TOKENS = 1024
# With lanes, a group under this many tokens that starts with nothing running also runs on every core, as one
# lane would run it: merged one-text requests (16 STS sentences: ~230 tokens) then form groups as large as
# with one lane. Before this rule two lanes split them into two small groups (158 against one lane's 202
# texts/s, 8.14 against 7.91 ms of CPU a text; docs/serving.md); a 32-text request (~460 tokens) keeps a core.
LANE_SMALL_TOKENS = 384
# Below this many tokens a group costs clearly more per text than offline's batches, so it is worth waiting for
# company (benchmarks/speed/small_calls.py, MiniLM on one core: 1 STS sentence 3.2x offline's CPU a text, 8 1.6x,
# 16 (~190 tokens) 1.23-1.26x, 32 1.07-1.24x over two runs).
SMALL_GROUP_TOKENS = 256
_DISCONNECT_POLL_S = 0.2  # how often a waiting request checks that its client is still there
T = TypeVar("T")


_MODEL_THREADS: dict[int, ThreadPoolExecutor] = {}  # by process id: a forked child inherits none of its threads
_MODEL_THREADS_LOCK = threading.Lock()


def model_thread() -> ThreadPoolExecutor:
    """The process's one thread for model calls spread over every core, one call after another.

    GNU OpenMP (torch's CPU ops) keeps a team of worker threads for each thread that ran an op on several
    threads, for that thread's life; once the teams together hold more threads than the machine has cores,
    the workers sleep between ops instead of spinning, and every op of a small forward waits for its workers
    to wake (a one-text encode took twice as long on 2 cores: benchmarks/speed/openmp_teams.py). So every
    batcher (dense, sparse, multi-vector, rerank) and the routes that encode apart run such calls here, and
    the server's loading thread lets its own team go once the models are warm (backends/base.py
    `release_openmp_workers`).
    """
    with _MODEL_THREADS_LOCK:
        executor = _MODEL_THREADS.get(os.getpid())
        if executor is None:
            executor = _MODEL_THREADS[os.getpid()] = ThreadPoolExecutor(1, thread_name_prefix="sbert-model")
        return executor


async def on_model_thread(call: Callable[[], T]) -> T:
    """`call()` on the model thread, awaited from the event loop."""
    return await asyncio.get_running_loop().run_in_executor(model_thread(), call)


@dataclass
class _Job:
    texts: list[Any]  # texts to embed, or (query, document) pairs to score
    lengths: list[int]  # tokens per text
    future: asyncio.Future[Any]
    enqueued: float = field(default_factory=time.monotonic)
    next: int = 0  # first text not yet handed to a group
    served: int = 0  # tokens handed to groups so far
    parts: list[tuple[int, Any]] = field(default_factory=list)  # (first row, vectors) per slice
    done: int = 0  # texts whose vectors are in

    @property
    def pending(self) -> int:
        """Tokens not yet handed to a group."""
        return sum(self.lengths[self.next :])


class DynamicBatcher:
    """Queues requests' texts; one worker encodes them in merged groups and hands each job its own rows."""

    def __init__(
        self, encode: Callable[[list[Any]], Any], metrics: Metrics, max_batch_tokens: int, max_wait_ms: float,
        max_queue: int, join: Callable[[list[Any]], Any] = np.concatenate, lanes: int = 1,
        single_thread_tokens: int = 0,
    ) -> None:  # fmt: skip
        # `encode` returns row-sliceable vectors (a numpy array, a scipy CSR matrix); `join` stacks a job's slices.
        self.encode, self.metrics, self.join = encode, metrics, join
        self.max_batch_tokens, self.max_wait, self.max_queue = max_batch_tokens, max_wait_ms / 1000, max_queue
        self._jobs: deque[_Job] = deque()
        self._queued = 0
        self._wakeup = asyncio.Event()
        self.lanes = max(1, lanes)
        # Groups merging several requests under this many tokens run on one thread, never cut across cores (0:
        # off). A cut group runs one forward per core, and on small groups each forward's fixed cost (every weight
        # read once) is much of it. A lone request's group keeps every core: its latency is all its client sees.
        self.single_thread_tokens = single_thread_tokens
        self._running: dict[asyncio.Task[None], int] = {}  # groups on the model now, and the lanes each holds
        self._lane_freed = asyncio.Event()
        # Every core: what a group that is not kept to one runs on, said explicitly on each group. The encode
        # thread is new to torch, and torch starts a new thread with the count some other thread set last
        # (backends/base.py lane_threads): left to that, a lone query ran on one core of the server's two.
        self._cores = _torch_threads()
        # Groups kept to one thread run here, a lane a thread; groups on every core run on model_thread().
        self._executor = ThreadPoolExecutor(max_workers=self.lanes, thread_name_prefix="sbert-encode")
        self._worker: asyncio.Task[None] | None = None
        self._freed = 0.0  # when the model (a lane of it) last finished a group, monotonic seconds
        self._last_requests = 0  # requests in the last group taken: over one shows concurrent clients

    def start(self) -> None:
        """Start the worker on the running event loop."""
        self._worker = asyncio.get_running_loop().create_task(self._run())

    async def submit(
        self, texts: list[Any], lengths: list[int], disconnected: Callable[[], Awaitable[bool]] | None = None
    ) -> Any:
        """Embed `texts` (`lengths`: tokens of each) with whatever else is waiting; rows in input order.

        `disconnected` is polled while the job waits: once it says the client is gone, the job
        leaves the queue (its texts are never encoded) and ClientGone is raised.
        """
        if self._queued + len(texts) > self.max_queue:
            raise QueueFull(f"{self._queued} texts already waiting")
        job = _Job(texts, lengths, asyncio.get_running_loop().create_future())
        self._jobs.append(job)
        self._queued += len(texts)
        self.metrics.queue_texts.set(self._queued)
        self._wakeup.set()
        if disconnected is None:
            return await job.future
        # One timer a request starts the polling, rather than an asyncio.wait a poll (its waiter, callbacks and
        # timer were 5% of the event loop's samples under one-text requests): most answers come before it fires.
        loop = asyncio.get_running_loop()
        watchers: list[asyncio.Task[None]] = []
        timer = loop.call_later(
            _DISCONNECT_POLL_S, lambda: watchers.append(loop.create_task(self._watch(job, disconnected)))
        )
        try:
            return await job.future
        finally:
            timer.cancel()
            for watcher in watchers:
                watcher.cancel()

    async def _watch(self, job: _Job, disconnected: Callable[[], Awaitable[bool]]) -> None:
        """Poll `disconnected` until the job is answered; a gone client's job leaves the queue with ClientGone."""
        while not job.future.done():
            if await disconnected():
                self._drop(job)
                return
            await asyncio.sleep(_DISCONNECT_POLL_S)

    def _drop(self, job: _Job) -> None:
        """Take a job out of the queue (a job already in a running group just loses its answer): ClientGone."""
        self._fail(job, ClientGone(f"client gone; {len(job.texts) - job.next} queued texts dropped"))

    async def stop(self) -> None:
        """Finish every queued job, then stop the worker (server shutdown drains here)."""
        while self._jobs or self._running:
            await asyncio.sleep(0.01)
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
        self._executor.shutdown(wait=True)

    async def _run(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._jobs:
                if sum(self._running.values()) >= self.lanes:
                    self._lane_freed.clear()
                    await self._lane_freed.wait()
                    continue
                await self._gather_company()
                if not self._jobs:  # every waiting client hung up meanwhile
                    break
                group = self._take_group()
                if self.lanes == 1:
                    await self._encode_group(group, 1 if self._one_thread(group) else self._cores)
                    self._freed = time.monotonic()  # a lane's end is marked in _lane_done
                else:
                    self._start_lane(group)

    def _start_lane(self, group: list[tuple[_Job, int, int]]) -> None:
        """Run the group on one lane (one thread), or on every lane when it is large and alone or small and first."""
        tokens = _tokens(group)
        # A large group with nothing beside it and nothing waiting takes every core (the next group waits for
        # it): a lone large request is then as fast as with one lane. So does a small group that starts with
        # nothing running (LANE_SMALL_TOKENS). Other groups, and those _one_thread keeps, run one per core.
        alone = not self._running and not self._one_thread(group)
        whole = alone and (tokens < LANE_SMALL_TOKENS or (tokens >= LANE_ALONE_TOKENS and not self._jobs))
        task = asyncio.get_running_loop().create_task(self._encode_group(group, self._cores if whole else 1))
        self._running[task] = self.lanes if whole else 1
        task.add_done_callback(self._lane_done)

    def _one_thread(self, group: list[tuple[_Job, int, int]]) -> bool:
        """Whether the group merges several requests into fewer than single_thread_tokens tokens."""
        return len(group) > 1 and _tokens(group) < self.single_thread_tokens

    def _lane_done(self, task: asyncio.Task[None]) -> None:
        self._running.pop(task, None)
        self._freed = time.monotonic()
        self._lane_freed.set()

    async def _gather_company(self) -> None:
        # The oldest job waits at most max_wait for others to share its group. Work too small to run well alone
        # that waited behind a running group gets that wait again once the model is free: answered clients come
        # back meanwhile (16 one-text clients otherwise settled into groups of 15 and 1, a lone text costing ~3x).
        # An idle engine with no sign of concurrent clients (the job came in with nothing running, after a
        # group of one request) starts at once: a lone client's requests never wait on the timer. Once as many
        # requests wait as the last group held, its clients are back and the group starts: 16 one-text clients
        # otherwise left the model idle until the timer ran out each round (367 against 403 texts/s).
        start = self._jobs[0].enqueued
        if start >= self._freed and self._last_requests <= 1 and not self._running:
            return
        if self._freed > start and sum(j.pending for j in self._jobs) < SMALL_GROUP_TOKENS:
            start = self._freed
        deadline = start + self.max_wait
        while sum(j.pending for j in self._jobs) < self.max_batch_tokens:
            if self._last_requests > 1 and len(self._jobs) >= self._last_requests:
                return  # as many requests wait as the last group held: its clients are back, no more are coming
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._wakeup.clear()
            try:  # asyncio.timeout, not wait_for: no task made for each request that arrives meanwhile
                async with asyncio.timeout(remaining):
                    await self._wakeup.wait()
            except TimeoutError:
                return

    def _take_group(self) -> list[tuple[_Job, int, int]]:
        """Slices (job, first text, end) filling one token budget, least-served jobs first.

        A large request is cut into slices, so a small one that arrives meanwhile runs in the
        next group instead of after the whole large one. A single text over the budget still
        goes alone.
        """
        group: list[tuple[_Job, int, int]] = []
        tokens = 0
        for job in sorted(self._jobs, key=self._priority):
            start = end = job.next
            limit = self._slice_limit(job, group, tokens)
            while end < len(job.texts) and (tokens + job.lengths[end] <= limit or not tokens):
                tokens += job.lengths[end]
                end += 1
            if end > start:
                if start == 0:
                    self.metrics.queue_wait.observe(time.monotonic() - job.enqueued)
                group.append((job, start, end))
                job.next, job.served = end, job.served + sum(job.lengths[start:end])
                self._queued -= end - start
            if tokens >= self.max_batch_tokens:
                break
        self._last_requests = len(group)
        for job, _, _ in group:
            if job.next == len(job.texts) and job in self._jobs:
                self._jobs.remove(job)
        self.metrics.queue_texts.set(self._queued)
        return group

    def _priority(self, job: _Job) -> tuple[int, float]:
        """Whole groups' worth of tokens already served, then arrival: FIFO among equals.

        A request that has had less than one group's worth waits its turn by age, so one
        cut short by a full group is next, not behind every later arrival (sorting by tokens
        served alone starved such requests: p99 31 s against p50 2.7 s for 20-document
        /v1/rerank requests from 64 clients); a huge request drops back a class per group
        served, so small ones still pass it.
        """
        return job.served // self.max_batch_tokens, job.enqueued

    def _slice_limit(self, job: _Job, group: list[tuple[_Job, int, int]], tokens: int) -> int:
        """The group's token total up to which `job` may add texts.

        A slice that leaves its job unfinished is kept to a quarter of the budget once the group
        holds a request that it completes: that request answers after the whole group, so a long
        slice beside it would only make it wait (measured: 1.22 s median for a 1-text request
        beside a 200k-token one with full slices, 0.5-0.9 s with this).
        """
        finishing = any(end == len(j.texts) for j, _, end in group)
        if finishing and job.pending > self.max_batch_tokens - tokens:
            return min(self.max_batch_tokens, tokens + self.max_batch_tokens // 4)
        return self.max_batch_tokens

    async def _encode_group(self, group: list[tuple[_Job, int, int]], threads: int) -> None:
        texts = [t for job, a, b in group for t in job.texts[a:b]]
        self.metrics.batch_texts.observe(len(texts))
        self.metrics.batch_tokens.observe(sum(sum(job.lengths[a:b]) for job, a, b in group))
        call = functools.partial(_on_threads, self.encode, threads, self._cores)
        executor = model_thread() if threads > 1 else self._executor
        try:
            vectors = await asyncio.get_running_loop().run_in_executor(executor, call, texts)
        except Exception as e:  # the error goes to the requests of this group; the worker lives on
            for job, _, _ in group:
                self._fail(job, e)
            return
        row = 0
        for job, a, b in group:
            job.parts.append((a, vectors[row : row + b - a]))
            job.done += b - a
            row += b - a
            if job.done == len(job.texts) and not job.future.done():  # a gone client's request just drops its rows
                job.future.set_result(self.join([v for _, v in sorted(job.parts, key=lambda p: p[0])]))

    def _fail(self, job: _Job, error: Exception) -> None:
        """Answer a job with `error`, its unrun texts out of the queue (a gone client, a failed group)."""
        if job in self._jobs:  # its other slices will not run
            self._jobs.remove(job)
            self._queued -= len(job.texts) - job.next
            self.metrics.queue_texts.set(self._queued)
        if not job.future.done():
            job.future.set_exception(error)


def _tokens(group: list[tuple[_Job, int, int]]) -> int:
    """The tokens of a group: each job's texts from a to b."""
    return sum(sum(job.lengths[a:b]) for job, a, b in group)


def _torch_threads() -> int:
    import torch

    return int(torch.get_num_threads())


def _on_threads(encode: Callable[[list[Any]], Any], threads: int, cores: int, texts: list[Any]) -> Any:
    """`encode(texts)` as a lane of `threads` of the process's `cores` (backends/base.py `lane_threads`)."""
    from sbert.backends.base import lane_threads

    with lane_threads(threads, cores):
        return encode(texts)
