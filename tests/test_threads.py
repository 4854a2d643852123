"""The CPU thread policy: the batch pool's one-thread workers leave every other thread's count as it was."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

import pytest
import torch

from sbert.backends import base


def _in_new_thread(call: Callable[[], int]) -> int:
    out: list[int] = []
    thread = threading.Thread(target=lambda: out.append(call()))
    thread.start()
    thread.join()
    return out[0]


def _set_default(threads: int) -> None:
    # torch starts a thread new to it with the count any thread set last: set from a throwaway thread.
    _in_new_thread(lambda: torch.set_num_threads(threads) or threads)


def test_the_batch_pool_runs_one_thread_a_worker_and_threads_started_after_it_keep_the_process_count():
    workers = 5  # a pool of its own: no other test makes one this size
    before = _in_new_thread(torch.get_num_threads)
    started = threading.Barrier(workers, timeout=30)

    def job(_: int) -> int:
        started.wait()  # every worker thread of the pool is running: each was set up by the initializer
        torch.ones(200_000).sum()  # an op: a thread's first one would set it up again with the last count set
        return torch.get_num_threads()

    def creator() -> int:
        torch.get_num_threads()
        torch.set_num_threads(3)  # the process's count, as the thread that makes the pool has it
        counts = list(base.batch_pool(workers).map(job, range(workers)))
        assert counts == [1] * workers, counts
        return _in_new_thread(torch.get_num_threads)

    try:
        assert _in_new_thread(creator) == 3  # was 1: the pool's workers had set the count every new thread got
    finally:
        pool = base._POOLS.pop((base.os.getpid(), workers), None)
        if pool is not None:
            pool.shutdown(wait=True)
        _set_default(before)


def test_a_lane_runs_on_its_threads_and_leaves_threads_started_after_it_the_process_count():
    before = _in_new_thread(torch.get_num_threads)

    def lane() -> tuple[int | None, int, int]:
        with base.lane_threads(1, 2):
            inside = (getattr(base._LANE, "threads", None), torch.get_num_threads())
            fresh = _in_new_thread(torch.get_num_threads)
        return (*inside, fresh)

    out: list[tuple[int | None, int, int]] = []
    try:
        _set_default(2)  # the process's count
        thread = threading.Thread(target=lambda: out.append(lane()))
        thread.start()
        thread.join()
        assert out == [(1, 1, 2)]  # the lane on one thread; a thread started meanwhile on the process's two
    finally:
        _set_default(before)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_a_thread_lets_its_openmp_workers_go_and_torch_runs_on_after():
    if "OpenMP" not in torch.__config__.parallel_info():
        pytest.skip("this torch runs without OpenMP")

    def released() -> tuple[bool, float]:
        torch.get_num_threads()
        torch.set_num_threads(2)
        x = torch.arange(40_000, dtype=torch.float32)
        x.sin().sum()  # an op on two threads: this thread now has a team of workers
        ok = base.release_openmp_workers()
        return ok, float(x.sin().sum())  # the next op starts a team again

    out: list[tuple[bool, float]] = []
    thread = threading.Thread(target=lambda: out.append(released()))
    thread.start()
    thread.join()
    ok, total = out[0]
    assert ok, "torch's OpenMP runtime was not found among the mapped libraries"
    assert total == pytest.approx(float(torch.arange(40_000, dtype=torch.float64).sin().sum()), abs=1e-3)
