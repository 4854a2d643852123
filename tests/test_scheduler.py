"""The dynamic batcher's group order: a request cut short by a full group goes next, a huge one yields to small ones."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import numpy as np
import torch

from sbert.serve.metrics import Metrics
from sbert.serve.scheduler import LANE_ALONE_TOKENS, LANE_SMALL_TOKENS, ClientGone, DynamicBatcher


def _batcher(budget: int) -> DynamicBatcher:
    return DynamicBatcher(lambda texts: np.zeros((len(texts), 1)), Metrics(), budget, max_wait_ms=0, max_queue=10_000)


def _enqueue(batcher: DynamicBatcher, name: str, texts: int, tokens: int) -> None:
    # submit() without awaiting its answer: the job is queued at once, groups are then taken by hand.
    asyncio.get_running_loop().create_task(batcher.submit([f"{name}{i}" for i in range(texts)], [tokens] * texts))


def test_a_request_cut_by_a_full_group_is_next_not_behind_later_arrivals():
    async def scenario() -> list[list[str]]:
        batcher = _batcher(budget=100)
        _enqueue(batcher, "a", 3, 40)  # 120 tokens: the first group holds two of its texts
        await asyncio.sleep(0)
        first = batcher._take_group()
        for k in range(3):  # later arrivals, each filling a group alone
            _enqueue(batcher, f"n{k}-", 2, 50)
        await asyncio.sleep(0)
        second = batcher._take_group()
        return [[t for job, a, b in g for t in job.texts[a:b]] for g in (first, second)]

    first, second = asyncio.run(scenario())
    assert first == ["a0", "a1"]
    assert second[0] == "a2"  # sorted by tokens served alone, a2 waited until no newer request was left


def test_a_small_request_passes_a_huge_one_after_its_first_group():
    async def scenario() -> list[str]:
        batcher = _batcher(budget=100)
        _enqueue(batcher, "huge", 50, 50)
        await asyncio.sleep(0)
        batcher._take_group()
        _enqueue(batcher, "small", 1, 10)
        await asyncio.sleep(0)
        return [t for job, a, b in batcher._take_group() for t in job.texts[a:b]]

    assert asyncio.run(scenario())[0] == "small0"


def test_lanes_run_groups_side_by_side_and_a_lone_large_or_small_one_on_every_core():
    both_running = threading.Barrier(2, timeout=10)
    seen: list[tuple[str, int]] = []

    def encode(texts: list[str]) -> np.ndarray:
        seen.append((texts[0], torch.get_num_threads()))
        if texts[0].startswith("pair"):
            both_running.wait()  # returns only once the other lane's group is running too
        return np.array([[float(t[-1])] for t in texts])

    async def scenario() -> list[np.ndarray]:
        batcher = DynamicBatcher(encode, Metrics(), 2000, max_wait_ms=0, max_queue=1000, lanes=2)
        batcher._cores = 3  # what a large group alone is given, told apart from a lane's one thread
        batcher.start()
        large = await batcher.submit(["large7"] * 2, [600, 600])  # 1200 tokens, nothing else: every core
        small = await batcher.submit(["small5"], [10])  # small, nothing running: every core, as one lane runs it
        medium = await batcher.submit(["medium4"] * 2, [250, 250])  # a core's worth (LANE_SMALL_TOKENS): one thread
        # Two requests of which neither fits the other's group: both finish only if the two lanes run at once.
        pair = await asyncio.gather(batcher.submit(["pair1"] * 10, [150] * 10), batcher.submit(["pair2"], [900]))
        await batcher.stop()
        return [large, small, medium, *pair]

    large, small, medium, first, second = asyncio.run(scenario())
    assert large.tolist() == [[7.0]] * 2 and small.tolist() == [[5.0]] and medium.tolist() == [[4.0]] * 2
    assert first.tolist() == [[1.0]] * 10 and second.tolist() == [[2.0]]
    assert LANE_SMALL_TOKENS <= 500 < LANE_ALONE_TOKENS
    assert seen[:3] == [("large7", 3), ("small5", 3), ("medium4", 1)]
    assert [threads for _, threads in seen[3:]] == [1, 1]  # side by side, one thread each


def test_merged_groups_under_single_thread_tokens_run_on_one_thread_and_a_lone_request_on_every_core():
    from sbert.backends.base import _LANE

    seen: dict[str, tuple[int | None, str, int]] = {}  # first text -> (lane threads, thread name, texts)

    def encode(texts: list[str]) -> np.ndarray:
        seen[texts[0]] = (getattr(_LANE, "threads", None), threading.current_thread().name, len(texts))
        return np.zeros((len(texts), 1))

    async def scenario(lanes: int, single_thread_tokens: int) -> None:
        batcher = DynamicBatcher(encode, Metrics(), 2000, max_wait_ms=0, max_queue=1000, lanes=lanes,
                                 single_thread_tokens=single_thread_tokens)  # fmt: skip
        batcher._cores = 3  # every core, told apart from a lane's one thread
        batcher.start()
        await asyncio.gather(batcher.submit(["merged"] * 2, [25] * 2), batcher.submit(["merged"] * 2, [25] * 2))
        await batcher.submit(["lone"] * 4, [25] * 4)  # 100 tokens, as small, but one client's
        await batcher.submit(["large"] * 2, [300, 300])  # 600 tokens
        await batcher.submit(["alone"] * 2, [600, 600])  # 1200 tokens, nothing else (LANE_ALONE_TOKENS)
        await batcher.stop()

    threads_before = torch.get_num_threads()
    try:
        for lanes, limit in ((1, 0), (1, 300), (2, 0), (2, 300), (2, 2000)):
            seen.clear()
            asyncio.run(scenario(lanes, limit))
            assert seen["merged"][2] == 4, "the two concurrent requests share one group"
            threads = {name: lane for name, (lane, _, _) in seen.items()}
            # Two merged requests under the limit keep to one thread; one client's request never does.
            assert threads == {"merged": 1 if limit else 3, "lone": 3, "large": 1 if lanes == 2 else 3, "alone": 3}
            # Groups on every core run on the process's one model thread, others on the batcher's lane threads.
            for lane, name, _ in seen.values():
                assert name.startswith("sbert-model" if lane == 3 else "sbert-encode"), (lanes, limit, seen)
    finally:  # the model thread ran torch on 3 threads: threads new to torch start with the count set last
        keeper = threading.Thread(target=torch.set_num_threads, args=(threads_before,))
        keeper.start()
        keeper.join()


def held_first_group() -> tuple[list[list[str]], threading.Event, Callable[[list[str]], np.ndarray]]:
    """An encode that records each group and holds the one starting with "first" until `release` is set."""
    release = threading.Event()
    groups: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        groups.append(list(texts))
        if texts[0] == "first":
            release.wait(10)
        return np.zeros((len(texts), 1))

    return groups, release, encode


def test_a_request_that_waited_behind_a_group_still_gets_company_once_the_model_is_free():
    # Measured from arrival alone, its wait was over when the model freed, so it ran alone while the answered
    # clients came back: 16 one-text clients then settled into groups of 15 and 1 (a lone text costs ~3x).
    groups, release, encode = held_first_group()

    async def scenario() -> None:
        batcher = DynamicBatcher(encode, Metrics(), 2000, max_wait_ms=300, max_queue=1000)
        batcher.start()
        first = asyncio.ensure_future(batcher.submit(["first"], [5]))
        while not groups:  # the first group is on the model
            await asyncio.sleep(0.01)
        late = asyncio.ensure_future(batcher.submit(["late"], [5]))
        await asyncio.sleep(0.4)  # longer than max_wait: the late request's own wait is over
        release.set()
        await first
        await batcher.submit(["company"], [5])  # the answered client comes back at once
        await late
        await batcher.stop()

    asyncio.run(scenario())
    assert groups == [["first"], ["late", "company"]]


def test_an_idle_engine_without_concurrent_clients_waits_on_no_timer():
    # max_wait is 2 s: a lone client's requests that waited on it would take 2 s each.
    import time

    groups: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        groups.append(list(texts))
        return np.zeros((len(texts), 1))

    async def scenario() -> list[float]:
        batcher = DynamicBatcher(encode, Metrics(), 2000, max_wait_ms=2000, max_queue=1000)
        batcher.start()
        took = []
        for text in ("one", "two", "three"):  # one client, one request after another
            start = time.monotonic()
            await batcher.submit([text], [5])
            took.append(time.monotonic() - start)
        await batcher.stop()
        return took

    took = asyncio.run(scenario())
    assert max(took) < 1.0, took
    assert groups == [["one"], ["two"], ["three"]]


def test_after_a_group_of_several_requests_a_new_one_still_waits_for_company():
    # Concurrent clients shown by the last group: the next request waits max_wait for the others to come back.
    groups, release, encode = held_first_group()

    async def scenario() -> None:
        batcher = DynamicBatcher(encode, Metrics(), 2000, max_wait_ms=300, max_queue=1000)
        batcher.start()
        first = asyncio.ensure_future(batcher.submit(["first"], [5]))
        while not groups:
            await asyncio.sleep(0.01)
        two = asyncio.gather(batcher.submit(["x"], [5]), batcher.submit(["y"], [5]))  # queue behind it
        await asyncio.sleep(0.05)
        release.set()
        await first
        await two  # a group of two requests: concurrent clients
        a = asyncio.ensure_future(batcher.submit(["a"], [5]))  # the engine is idle now
        await asyncio.sleep(0.05)
        await batcher.submit(["b"], [5])
        await a
        await batcher.stop()

    asyncio.run(scenario())
    assert groups == [["first"], ["x", "y"], ["a", "b"]]


def _seven_on_the_model_thread() -> int:
    from sbert.serve.scheduler import model_thread

    return int(model_thread().submit(lambda: 7).result(timeout=20))  # an inherited, threadless one never answers


def test_a_forked_child_runs_calls_on_a_model_thread_of_its_own():
    import multiprocessing

    from sbert.serve.scheduler import model_thread

    assert model_thread().submit(lambda: 1).result() == 1  # the parent's thread is running
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(_seven_on_the_model_thread) == 7


def test_a_client_gone_while_waiting_takes_its_texts_out_of_the_queue():
    release = threading.Event()
    encoded: list[str] = []

    def encode(texts: list[str]) -> np.ndarray:
        encoded.extend(texts)
        release.wait(10)  # the first group holds the model while the second request waits
        return np.zeros((len(texts), 1))

    async def scenario() -> tuple[list[str], BaseException | None, tuple[int, ...]]:
        batcher = DynamicBatcher(encode, Metrics(), 100, max_wait_ms=0, max_queue=10_000)
        batcher.start()
        first = asyncio.get_running_loop().create_task(batcher.submit(["held"], [10]))
        await asyncio.sleep(0.05)
        polls: list[bool] = []

        async def gone() -> bool:
            polls.append(True)
            return len(polls) >= 2  # there at the first poll, gone at the second

        outcome = (await asyncio.gather(batcher.submit(["dropped"] * 3, [10] * 3, gone), return_exceptions=True))[0]
        release.set()
        answered = await first
        await batcher.stop()
        return list(encoded), outcome if isinstance(outcome, BaseException) else None, answered.shape

    encoded_texts, error, shape = asyncio.run(scenario())
    assert isinstance(error, ClientGone) and "3 queued texts dropped" in str(error)
    assert encoded_texts == ["held"]  # the gone client's texts never reached the model
    assert shape == (1, 1)  # the request beside it was answered


def test_merged_requests_start_once_as_many_wait_as_the_last_group_held_not_at_the_timer():
    groups: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        groups.append(list(texts))
        return np.zeros((len(texts), 1))

    async def scenario() -> float:
        batcher = DynamicBatcher(encode, Metrics(), 8192, max_wait_ms=20_000, max_queue=10_000)
        first = [batcher.submit([f"a{i}"], [10]) for i in range(3)]  # queued before the worker runs: one group
        batcher.start()
        await asyncio.gather(*first)
        started = time.monotonic()
        again = [asyncio.get_running_loop().create_task(batcher.submit([f"b{i}"], [10])) for i in range(2)]
        await asyncio.sleep(0.3)  # two of the three clients are back: the group waits for the third
        again.append(asyncio.get_running_loop().create_task(batcher.submit(["b2"], [10])))
        await asyncio.gather(*again)
        elapsed = time.monotonic() - started
        await batcher.stop()
        return elapsed

    elapsed = asyncio.run(scenario())
    assert groups == [["a0", "a1", "a2"], ["b0", "b1", "b2"]]
    assert elapsed < 5  # the 20 s wait for company ended when the third request came
